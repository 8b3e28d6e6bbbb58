#include "caffe/util/math_functions.hpp"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include <glog/logging.h>

#include "caffe/util/parallel_for.hpp"

namespace caffe {
namespace math {

namespace {
// BLAS level-1 routines take int counts; walk longer vectors in int-sized pieces.
constexpr int64_t kBlasChunk = INT_MAX / 2;

template <typename Fn>
void Chunked(int64_t n, Fn fn) {
  for (int64_t start = 0; start < n; start += kBlasChunk) {
    fn(start, static_cast<int>(std::min(kBlasChunk, n - start)));
  }
}
}  // namespace

void gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
          const float* A, const float* B, float beta, float* C) {
  int lda = (trans_a == NoTrans) ? K : M;
  int ldb = (trans_b == NoTrans) ? N : K;
  cblas_sgemm(CblasRowMajor, trans_a == NoTrans ? CblasNoTrans : CblasTrans,
              trans_b == NoTrans ? CblasNoTrans : CblasTrans, M, N, K, alpha, A, lda, B, ldb,
              beta, C, N);
}

void gemv(Transpose trans_a, int M, int N, float alpha, const float* A, const float* x,
          float beta, float* y) {
  cblas_sgemv(CblasRowMajor, trans_a == NoTrans ? CblasNoTrans : CblasTrans, M, N, alpha, A,
              N, x, 1, beta, y, 1);
}

// Elementwise maps run on the project's own pool (ParallelFor), not BLAS level 1:
// OpenBLAS threads these on a pool of its own, and waking it beside OpenMP's made a
// ResNet-20 step's Split backward (two saxpy-sized sums per split) 7x slower at 2
// threads than at 1.
void axpy(int64_t n, float alpha, const float* x, float* y) {
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] += alpha * x[i];
  });
}

void axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + beta * y[i];
}

void copy(int64_t n, const float* x, float* y) {
  if (x != y && n > 0) std::memcpy(y, x, sizeof(float) * n);
}

void set(int64_t n, float value, float* y) {
  if (value == 0.f) {
    if (n > 0) std::memset(y, 0, sizeof(float) * n);
    return;
  }
  std::fill(y, y + n, value);
}

void add_scalar(int64_t n, float alpha, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha;
}

void scal(int64_t n, float alpha, float* x) {
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] *= alpha;
  });
}

void scale(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

void add(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
void sub(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}
void mul(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
void div(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] / b[i];
}
void powx(int64_t n, const float* a, float b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::pow(a[i], b);
}
void sqr(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i];
}
void sqrt(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(a[i]);
}
void exp(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(a[i]);
}
void log(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::log(a[i]);
}
void abs(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(a[i]);
}
void sign(int64_t n, const float* a, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((0.f < a[i]) - (a[i] < 0.f));
}

float dot(int64_t n, const float* x, const float* y) {
  // Accumulate chunks in double: long gradients lose precision in a float sum.
  double total = 0;
  Chunked(n, [&](int64_t s, int len) { total += cblas_sdot(len, x + s, 1, y + s, 1); });
  return static_cast<float>(total);
}

float strided_dot(int64_t n, const float* x, int incx, const float* y, int incy) {
  CHECK_LE(n, INT_MAX);
  return cblas_sdot(static_cast<int>(n), x, incx, y, incy);
}

float asum(int64_t n, const float* x) {
  double total = 0;
  Chunked(n, [&](int64_t s, int len) { total += cblas_sasum(len, x + s, 1); });
  return static_cast<float>(total);
}

void rng_uniform(int64_t n, float a, float b, std::mt19937_64& rng, float* r) {
  CHECK_LE(a, b);
  std::uniform_real_distribution<float> dist(a, std::nextafter(b, b + 1.f));
  for (int64_t i = 0; i < n; ++i) r[i] = dist(rng);
}

void rng_gaussian(int64_t n, float mean, float sigma, std::mt19937_64& rng, float* r) {
  CHECK_GT(sigma, 0);
  std::normal_distribution<float> dist(mean, sigma);
  for (int64_t i = 0; i < n; ++i) r[i] = dist(rng);
}

void rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, int* r) {
  CHECK_GE(p, 0);
  CHECK_LE(p, 1);
  std::bernoulli_distribution dist(p);
  for (int64_t i = 0; i < n; ++i) r[i] = dist(rng) ? 1 : 0;
}

void rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, unsigned* r) {
  CHECK_GE(p, 0);
  CHECK_LE(p, 1);
  std::bernoulli_distribution dist(p);
  for (int64_t i = 0; i < n; ++i) r[i] = dist(rng) ? 1u : 0u;
}

}  // namespace math
}  // namespace caffe
