// The CPU thread budget: one knob (`-threads`) for the project's own loops, OpenBLAS
// and oneDNN, so that nothing runs more threads than it allows.
#ifndef CAFFE_UTIL_NUM_THREADS_HPP_
#define CAFFE_UTIL_NUM_THREADS_HPP_

namespace caffe {

// Number of CPU threads the project's own loops, BLAS and oneDNN may use.
int NumThreads();
void SetNumThreads(int threads);

}  // namespace caffe

#endif  // CAFFE_UTIL_NUM_THREADS_HPP_
