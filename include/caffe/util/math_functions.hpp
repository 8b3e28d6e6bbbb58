// Dense float32 math on host buffers (OpenBLAS underneath), and the device
// counterparts (cuBLAS and own kernels) in CUDA builds. Element counts are int64;
// BLAS calls are split where a count exceeds what BLAS' int arguments can hold.
#ifndef CAFFE_UTIL_MATH_FUNCTIONS_HPP_
#define CAFFE_UTIL_MATH_FUNCTIONS_HPP_

#include <cstdint>
#include <random>

namespace caffe {
namespace math {

enum Transpose { NoTrans, Trans };

// C = alpha * op(A) * op(B) + beta * C, row-major; op(A) is M x K, op(B) is K x N.
void gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
          const float* A, const float* B, float beta, float* C);
// y = alpha * op(A) * x + beta * y, A is M x N row-major.
void gemv(Transpose trans_a, int M, int N, float alpha, const float* A, const float* x,
          float beta, float* y);

void axpy(int64_t n, float alpha, const float* x, float* y);            // y += a x
void axpby(int64_t n, float alpha, const float* x, float beta, float* y);  // y = a x + b y
void copy(int64_t n, const float* x, float* y);
void set(int64_t n, float value, float* y);
void add_scalar(int64_t n, float alpha, float* y);
void scal(int64_t n, float alpha, float* x);
void scale(int64_t n, float alpha, const float* x, float* y);  // y = a x

void add(int64_t n, const float* a, const float* b, float* y);
void sub(int64_t n, const float* a, const float* b, float* y);
void mul(int64_t n, const float* a, const float* b, float* y);
void div(int64_t n, const float* a, const float* b, float* y);
void powx(int64_t n, const float* a, float b, float* y);
void sqr(int64_t n, const float* a, float* y);
void sqrt(int64_t n, const float* a, float* y);
void exp(int64_t n, const float* a, float* y);
void log(int64_t n, const float* a, float* y);
void abs(int64_t n, const float* a, float* y);
void sign(int64_t n, const float* a, float* y);

float dot(int64_t n, const float* x, const float* y);
float strided_dot(int64_t n, const float* x, int incx, const float* y, int incy);
float asum(int64_t n, const float* x);

// Random fills; every draw comes from the caller's generator so runs are repeatable.
void rng_uniform(int64_t n, float a, float b, std::mt19937_64& rng, float* r);
void rng_gaussian(int64_t n, float mean, float sigma, std::mt19937_64& rng, float* r);
void rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, int* r);
void rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, unsigned* r);

#ifdef USE_CUDA
void gpu_gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
              const float* A, const float* B, float beta, float* C);
void gpu_gemv(Transpose trans_a, int M, int N, float alpha, const float* A, const float* x,
              float beta, float* y);
void gpu_axpy(int64_t n, float alpha, const float* x, float* y);
void gpu_axpby(int64_t n, float alpha, const float* x, float beta, float* y);
void gpu_copy(int64_t n, const float* x, float* y);
void gpu_set(int64_t n, float value, float* y);
void gpu_scal(int64_t n, float alpha, float* x);
void gpu_scale(int64_t n, float alpha, const float* x, float* y);  // y = a x
void gpu_sub(int64_t n, const float* a, const float* b, float* y);
void gpu_mul(int64_t n, const float* a, const float* b, float* y);
void gpu_div(int64_t n, const float* a, const float* b, float* y);
void gpu_sign(int64_t n, const float* a, float* y);
float gpu_dot(int64_t n, const float* x, const float* y);
float gpu_asum(int64_t n, const float* x);
// Device counterpart of rng_bernoulli: r[i] = 1 with probability p, else 0, written
// to device memory. One 64-bit seed is taken from the caller's (host) generator and
// the bits come from a counter-based generator (Philox) indexed by element, so the
// draw depends only on that generator's state, not on the launch shape. The values
// differ from what rng_bernoulli draws from the same generator.
void gpu_rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, unsigned* r);
// Device counterparts of rng_uniform (in [a, b)) and rng_gaussian, drawn the same way
// (one seed from the host generator, Philox by element); not the host's values.
void gpu_rng_uniform(int64_t n, float a, float b, std::mt19937_64& rng, float* y);
void gpu_rng_gaussian(int64_t n, float mean, float sigma, std::mt19937_64& rng, float* y);
#endif

}  // namespace math
}  // namespace caffe

#endif  // CAFFE_UTIL_MATH_FUNCTIONS_HPP_
