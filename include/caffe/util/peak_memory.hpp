// This process's peak resident memory, for the tools and benchmarks that report it.
#ifndef CAFFE_UTIL_PEAK_MEMORY_HPP_
#define CAFFE_UTIL_PEAK_MEMORY_HPP_

namespace caffe {

// The high-water mark of this process's resident memory so far, in MB: the kernel's
// count, so it covers every allocation, not only blobs. It reads VmHWM, which belongs
// to this program's own address space. getrusage's ru_maxrss, the fallback where
// /proc is missing, survives exec on Linux: a program started by a large parent (a
// benchmark driver that imported PyTorch, a test process) would report the parent's
// peak when that is higher.
double PeakResidentMegabytes();

}  // namespace caffe

#endif  // CAFFE_UTIL_PEAK_MEMORY_HPP_
