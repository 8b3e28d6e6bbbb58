// The one translation unit built with OpenMP (CAFFE_OPENMP, set in CMakeLists.txt
// when the compiler supports it).
#include "caffe/util/parallel_for.hpp"

#include <algorithm>

#ifdef CAFFE_OPENMP
#include <omp.h>
#endif

#include "caffe/util/error.hpp"
#include "caffe/util/num_threads.hpp"

namespace caffe {

int ParallelThreads(int64_t n, int64_t min_elements) {
#ifdef CAFFE_OPENMP
  if (n < min_elements || omp_in_parallel()) return 1;
  const int64_t by_work = std::max<int64_t>(1, n / std::max<int64_t>(1, min_elements / 2));
  return static_cast<int>(std::min<int64_t>(NumThreads(), by_work));
#else
  (void)n;
  (void)min_elements;
  return 1;
#endif
}

namespace internal {

void RunChunks(int64_t n, int threads, ChunkFn fn, const void* body) {
#ifdef CAFFE_OPENMP
  // Chunks are whole multiples of 16 floats (a cache line), so two threads never
  // write the same line.
  const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
  {
    const int64_t begin = std::min(n, chunk * omp_get_thread_num());
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end) fn(body, begin, end);
  }
#else
  (void)threads;
  fn(body, 0, n);
#endif
}

}  // namespace internal

}  // namespace caffe
