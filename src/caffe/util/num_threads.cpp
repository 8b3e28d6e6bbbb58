#include "caffe/util/num_threads.hpp"

#include <thread>

#include "caffe/util/error.hpp"

#ifdef USE_OPENBLAS_THREADS
extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_parallel(void);  // 0 sequential, 1 pthreads, 2 OpenMP
#endif

namespace caffe {

namespace {
int g_num_threads = 0;
}

int NumThreads() {
  if (g_num_threads > 0) return g_num_threads;
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

void SetNumThreads(int threads) {
  CAFFE_REQUIRE(threads > 0) << "thread count must be positive, got " << threads;
  g_num_threads = threads;
#ifdef USE_OPENBLAS_THREADS
  openblas_set_num_threads(threads);
#endif
}

bool BlasSharesOpenMpPool() {
#ifdef USE_OPENBLAS_THREADS
  return openblas_get_parallel() == 2;
#else
  return false;
#endif
}

}  // namespace caffe
