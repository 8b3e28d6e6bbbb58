// For layers whose host and device paths differ only in where the memory lives and
// which library multiplies (host BLAS or cuBLAS): such a layer is written once over a
// Mode, and these pick the blob memory and the product for that mode. The device path
// is then the host path's code, which the CPU tests run on every machine; only these
// dispatches are device-specific. Mode::GPU needs a CUDA build (checked).
#ifndef CAFFE_MODE_MATH_HPP_
#define CAFFE_MODE_MATH_HPP_

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

inline const float* DataOn(Mode mode, const Blob& blob) {
  return mode == Mode::GPU ? blob.gpu_data() : blob.cpu_data();
}
inline float* MutableDataOn(Mode mode, Blob* blob) {
  return mode == Mode::GPU ? blob->mutable_gpu_data() : blob->mutable_cpu_data();
}
inline const float* DiffOn(Mode mode, const Blob& blob) {
  return mode == Mode::GPU ? blob.gpu_diff() : blob.cpu_diff();
}
inline float* MutableDiffOn(Mode mode, Blob* blob) {
  return mode == Mode::GPU ? blob->mutable_gpu_diff() : blob->mutable_cpu_diff();
}

namespace math {

// math::gemm / gemv, or gpu_gemm / gpu_gemv on device pointers for Mode::GPU.
void gemm(Mode mode, Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
          const float* A, const float* B, float beta, float* C);
void gemv(Mode mode, Transpose trans_a, int M, int N, float alpha, const float* A,
          const float* x, float beta, float* y);
// The vector operations the solvers' updates are made of, likewise.
void axpy(Mode mode, int64_t n, float alpha, const float* x, float* y);
void axpby(Mode mode, int64_t n, float alpha, const float* x, float beta, float* y);
void copy(Mode mode, int64_t n, const float* x, float* y);
void scal(Mode mode, int64_t n, float alpha, float* x);
void sign(Mode mode, int64_t n, const float* a, float* y);
float dot(Mode mode, int64_t n, const float* x, const float* y);

}  // namespace math
}  // namespace caffe

#endif  // CAFFE_MODE_MATH_HPP_
