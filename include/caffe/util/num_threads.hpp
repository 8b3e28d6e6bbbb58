// The CPU thread budget: one knob (`-threads`) for the project's own loops, OpenBLAS
// and oneDNN, so that nothing runs more threads than it allows.
#ifndef CAFFE_UTIL_NUM_THREADS_HPP_
#define CAFFE_UTIL_NUM_THREADS_HPP_

namespace caffe {

// Number of CPU threads the project's own loops, BLAS and oneDNN may use.
int NumThreads();
void SetNumThreads(int threads);

// Whether BLAS runs on OpenMP's threads, the pool oneDNN and ParallelFor use
// (OpenBLAS's OpenMP build, as the loader resolved it). With its own pthreads, two
// pools take turns on the same cores and each spins while the other works.
bool BlasSharesOpenMpPool();

}  // namespace caffe

#endif  // CAFFE_UTIL_NUM_THREADS_HPP_
