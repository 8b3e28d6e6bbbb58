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

void axpy(Mode mode, int64_t n, float alpha, const float* x, float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_axpy(n, alpha, x, y);
#endif
  axpy(n, alpha, x, y);
}

void axpby(Mode mode, int64_t n, float alpha, const float* x, float beta, float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_axpby(n, alpha, x, beta, y);
#endif
  axpby(n, alpha, x, beta, y);
}

void copy(Mode mode, int64_t n, const float* x, float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_copy(n, x, y);
#endif
  copy(n, x, y);
}

void scal(Mode mode, int64_t n, float alpha, float* x) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_scal(n, alpha, x);
#endif
  scal(n, alpha, x);
}

void sign(Mode mode, int64_t n, const float* a, float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_sign(n, a, y);
#endif
  sign(n, a, y);
}

float dot(Mode mode, int64_t n, const float* x, const float* y) {
  RequireDeviceBuild(mode);
#ifdef USE_CUDA
  if (mode == Mode::GPU) return gpu_dot(n, x, y);
#endif
  return dot(n, x, y);
}

}  // namespace math
}  // namespace caffe
