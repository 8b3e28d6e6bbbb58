// This process's peak resident memory, and the device memory in use, for the tools
// and benchmarks that report them.
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

// The current device's memory in use now, in MB: total less free (cudaMemGetInfo), so
// the CUDA context and every allocation on the device count, this process's and any
// other's. The net's memory plan allocates its buffers once per shape, so after a
// training step this is the step's high-water mark. -1 in a CPU-only build.
double DeviceMemoryInUseMegabytes();

}  // namespace caffe

#endif  // CAFFE_UTIL_PEAK_MEMORY_HPP_
