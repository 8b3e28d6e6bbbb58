#include "caffe/common.hpp"

#include <thread>

#ifdef USE_OPENBLAS_THREADS
extern "C" void openblas_set_num_threads(int);
#endif

namespace caffe {

string Context::SerializeRng() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void Context::DeserializeRng(const string& state) {
  std::istringstream in(state);
  in >> rng_;
  CAFFE_REQUIRE(!in.fail()) << "random generator state is corrupt";
}

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

}  // namespace caffe
