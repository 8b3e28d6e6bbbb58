// Building blocks for the project's own CUDA kernels (include from .cu files only):
// the grid-stride loop, a strided block copy, and a deterministic per-segment sum. The sum
// is the reason this exists: loss totals, bias/scale gradients and per-group
// statistics must come out the same on every run, so they reduce in double through a
// fixed tree in one block per segment rather than with float atomics.
#ifndef CAFFE_UTIL_DEVICE_KERNELS_CUH_
#define CAFFE_UTIL_DEVICE_KERNELS_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "caffe/util/device_alternate.hpp"

namespace caffe {

// The index loop of a grid-stride kernel (launched with CudaGridBlocks(n) blocks of
// kCudaThreads), in 64 bits.
#define CUDA_GRID_STRIDE_LOOP(i, n)                                                   \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Copies `blocks` runs of `block` elements: run b goes from src + b * src_stride to
// dst + b * dst_stride (offsets are folded into the pointers by the caller). Concat
// and Slice are this copy in opposite directions; one thread per element.
// (A template only so that every .cu file including this header can instantiate it.)
template <typename T>
__global__ void CopyBlocksKernel(int64_t n, int64_t block, int64_t src_stride,
                                 int64_t dst_stride, const T* src, T* dst) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t b = i / block, r = i % block;
    dst[b * dst_stride + r] = src[b * src_stride + r];
  }
}

inline void CopyBlocks(int64_t blocks, int64_t block, int64_t src_stride, int64_t dst_stride,
                       const float* src, float* dst) {
  const int64_t n = blocks * block;
  if (n == 0) return;
  CopyBlocksKernel<float>
      <<<CudaGridBlocks(n), kCudaThreads>>>(n, block, src_stride, dst_stride, src, dst);
  CUDA_CHECK(cudaPeekAtLastError());
}

// Sum of `value` over the kCudaThreads threads of the block, in a fixed order,
// returned to every thread. Every thread of the block must call it (blockDim.x must
// be kCudaThreads).
__device__ inline double BlockSum(double value) {
  __shared__ double partial[kCudaThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kCudaThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const double total = partial[0];
  __syncthreads();  // the buffer may be reused by the caller's next segment
  return total;
}

// For every segment s < segments: out[s] = alpha * sum_{j < length} term(s, j), plus
// out[s] itself when accumulate is set (weight gradients accumulate; everything else
// is overwritten). `Term` is a functor with `__device__ double operator()(int64_t s,
// int64_t j) const`. One block per segment (grid-stride over segments), the threads
// striding over j, then BlockSum: the result depends only on the data, never on
// scheduling.
template <typename Term>
__global__ void SegmentSumKernel(int64_t segments, int64_t length, Term term, double alpha,
                                 bool accumulate, float* out) {
  for (int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) sum += term(s, j);
    sum = BlockSum(sum);
    if (threadIdx.x == 0) {
      const double scaled = alpha * sum;
      out[s] = static_cast<float>(accumulate ? out[s] + scaled : scaled);
    }
  }
}

template <typename Term>
void SegmentSum(int64_t segments, int64_t length, const Term& term, double alpha,
                bool accumulate, float* out) {
  if (segments == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>(segments, 65535));
  SegmentSumKernel<Term><<<blocks, kCudaThreads>>>(segments, length, term, alpha, accumulate,
                                                   out);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe

#endif  // CAFFE_UTIL_DEVICE_KERNELS_CUH_
