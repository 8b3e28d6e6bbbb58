// Device counterparts of math_functions.cpp: cuBLAS for BLAS-shaped work, small
// kernels for the rest. One cuBLAS handle per host thread and device.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <map>

#include "caffe/util/device_alternate.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {
namespace math {

namespace {

cublasHandle_t Handle() {
  thread_local std::map<int, cublasHandle_t> handles;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  handles[device] = handle;
  return handle;
}

__global__ void SetKernel(long long n, float value, float* y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    y[i] = value;
  }
}

__global__ void AxpbyKernel(long long n, float alpha, const float* x, float beta, float* y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    y[i] = alpha * x[i] + beta * y[i];
  }
}

// Each Philox call yields four 32-bit words; element group g (elements 4g .. 4g+3)
// uses subsequence g of the seed's stream, whatever thread handles it. A word below
// `limit` (p * 2^32) means 1, so P(1) = p up to 2^-32.
__global__ void BernoulliKernel(long long n, unsigned long long seed, unsigned long long limit,
                                unsigned* r) {
  const long long groups = (n + 3) / 4;
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
       g += (long long)blockDim.x * gridDim.x) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, g, 0, &state);
    const uint4 bits = curand4(&state);
    const unsigned words[4] = {bits.x, bits.y, bits.z, bits.w};
    for (int k = 0; k < 4 && 4 * g + k < n; ++k) r[4 * g + k] = words[k] < limit ? 1u : 0u;
  }
}

// As BernoulliKernel, four elements per Philox call: y = a + (b - a) u with u the
// word's top 24 bits over 2^24, in [0, 1) like the host's uniform draw.
__global__ void UniformKernel(long long n, unsigned long long seed, float a, float b, float* y) {
  const long long groups = (n + 3) / 4;
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
       g += (long long)blockDim.x * gridDim.x) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, g, 0, &state);
    const uint4 bits = curand4(&state);
    const unsigned words[4] = {bits.x, bits.y, bits.z, bits.w};
    for (int k = 0; k < 4 && 4 * g + k < n; ++k) {
      const float u = static_cast<float>(words[k] >> 8) * (1.0f / 16777216.0f);
      y[4 * g + k] = a + (b - a) * u;
    }
  }
}

__global__ void GaussianKernel(long long n, unsigned long long seed, float mean, float sigma,
                               float* y) {
  const long long groups = (n + 3) / 4;
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
       g += (long long)blockDim.x * gridDim.x) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, g, 0, &state);
    const float4 z = curand_normal4(&state);
    const float values[4] = {z.x, z.y, z.z, z.w};
    for (int k = 0; k < 4 && 4 * g + k < n; ++k) y[4 * g + k] = mean + sigma * values[k];
  }
}

__global__ void ScaleKernel(long long n, float alpha, const float* x, float* y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    y[i] = alpha * x[i];
  }
}

// -1, 0 or +1 as the host's sign(): zero (and NaN) give 0.
__global__ void SignKernel(long long n, const float* a, float* y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    y[i] = static_cast<float>((0.f < a[i]) - (a[i] < 0.f));
  }
}

// The binary elementwise operations share one kernel, picked by a tag type.
struct SubOp {
  __device__ float operator()(float a, float b) const { return a - b; }
};
struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }
};

template <typename Op>
__global__ void BinaryKernel(long long n, const float* a, const float* b, float* y) {
  const Op op;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    y[i] = op(a[i], b[i]);
  }
}


}  // namespace

void gpu_gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
              const float* A, const float* B, float beta, float* C) {
  // cuBLAS is column-major: compute C^T = op(B)^T op(A)^T by swapping the operands.
  const int lda = (trans_a == NoTrans) ? K : M;
  const int ldb = (trans_b == NoTrans) ? N : K;
  const cublasOperation_t op_a = (trans_a == NoTrans) ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_b = (trans_b == NoTrans) ? CUBLAS_OP_N : CUBLAS_OP_T;
  CUBLAS_CHECK(cublasSgemm(Handle(), op_b, op_a, N, M, K, &alpha, B, ldb, A, lda, &beta, C, N));
}

void gpu_gemv(Transpose trans_a, int M, int N, float alpha, const float* A, const float* x,
              float beta, float* y) {
  const cublasOperation_t op = (trans_a == NoTrans) ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasSgemv(Handle(), op, N, M, &alpha, A, N, x, 1, &beta, y, 1));
}

void gpu_axpy(int64_t n, float alpha, const float* x, float* y) {
  CUBLAS_CHECK(cublasSaxpy_64(Handle(), n, &alpha, x, 1, y, 1));
}

void gpu_axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  AxpbyKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, alpha, x, beta, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_copy(int64_t n, const float* x, float* y) {
  if (x != y) CUDA_CHECK(cudaMemcpy(y, x, sizeof(float) * n, cudaMemcpyDefault));
}

void gpu_set(int64_t n, float value, float* y) {
  if (value == 0.f) {
    CUDA_CHECK(cudaMemset(y, 0, sizeof(float) * n));
    return;
  }
  SetKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, value, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_scal(int64_t n, float alpha, float* x) {
  CUBLAS_CHECK(cublasSscal_64(Handle(), n, &alpha, x, 1));
}

void gpu_scale(int64_t n, float alpha, const float* x, float* y) {
  ScaleKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, alpha, x, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_sub(int64_t n, const float* a, const float* b, float* y) {
  BinaryKernel<SubOp><<<CudaGridBlocks(n), kCudaThreads>>>(n, a, b, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_mul(int64_t n, const float* a, const float* b, float* y) {
  BinaryKernel<MulOp><<<CudaGridBlocks(n), kCudaThreads>>>(n, a, b, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_div(int64_t n, const float* a, const float* b, float* y) {
  BinaryKernel<DivOp><<<CudaGridBlocks(n), kCudaThreads>>>(n, a, b, y);
  CUDA_CHECK(cudaGetLastError());
}

void gpu_sign(int64_t n, const float* a, float* y) {
  SignKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, a, y);
  CUDA_CHECK(cudaGetLastError());
}

float gpu_dot(int64_t n, const float* x, const float* y) {
  float result = 0;
  CUBLAS_CHECK(cublasSdot_64(Handle(), n, x, 1, y, 1, &result));
  return result;
}

float gpu_asum(int64_t n, const float* x) {
  float result = 0;
  CUBLAS_CHECK(cublasSasum_64(Handle(), n, x, 1, &result));
  return result;
}

void gpu_rng_bernoulli(int64_t n, float p, std::mt19937_64& rng, unsigned* r) {
  const unsigned long long seed = rng();  // drawn even when n == 0, as a step of the stream
  if (n <= 0) return;
  const double clamped = p < 0.f ? 0.0 : (p > 1.f ? 1.0 : static_cast<double>(p));
  const unsigned long long limit = static_cast<unsigned long long>(clamped * 4294967296.0);
  BernoulliKernel<<<CudaGridBlocks((n + 3) / 4), kCudaThreads>>>(n, seed, limit, r);
  CUDA_CHECK(cudaPeekAtLastError());
}

void gpu_rng_uniform(int64_t n, float a, float b, std::mt19937_64& rng, float* y) {
  const unsigned long long seed = rng();
  if (n <= 0) return;
  UniformKernel<<<CudaGridBlocks((n + 3) / 4), kCudaThreads>>>(n, seed, a, b, y);
  CUDA_CHECK(cudaPeekAtLastError());
}

void gpu_rng_gaussian(int64_t n, float mean, float sigma, std::mt19937_64& rng, float* y) {
  const unsigned long long seed = rng();
  if (n <= 0) return;
  GaussianKernel<<<CudaGridBlocks((n + 3) / 4), kCudaThreads>>>(n, seed, mean, sigma, y);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace math
}  // namespace caffe
