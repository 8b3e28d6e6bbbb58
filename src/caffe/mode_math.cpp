#include "caffe/mode_math.hpp"

namespace caffe {
namespace math {

namespace {

// Mode::GPU in a build without CUDA is a caller's bug, never silently the host path.
void RequireDeviceBuild(Mode mode) {
#ifndef USE_CUDA
  CHECK(mode == Mode::CPU) << "a GPU-mode product in a CPU-only build";
#else
  (void)mode;
#endif
}

}  // namespace

void gemm(Mode mode, Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
          const float* A, const float* B, float beta, float* C) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) {
    gpu_gemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    return;
  }
#endif
  gemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
}

void gemv(Mode mode, Transpose trans_a, int M, int N, float alpha, const float* A,
          const float* x, float beta, float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) {
    gpu_gemv(trans_a, M, N, alpha, A, x, beta, y);
    return;
  }
#endif
  gemv(trans_a, M, N, alpha, A, x, beta, y);
}

}  // namespace math
}  // namespace caffe
