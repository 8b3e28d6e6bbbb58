// Launch shape for the grid-stride kernels of the compute-heavy layers (im2col,
// pooling, LRN, softmax, batch norm): included only by .cu files.
#ifndef CAFFE_UTIL_CUDA_GRID_CUH_
#define CAFFE_UTIL_CUDA_GRID_CUH_

#include <algorithm>
#include <cstdint>

#include "caffe/util/device_alternate.hpp"

namespace caffe {

// Enough blocks of kCudaThreads to fill an H100/H200 many times over; past that the
// kernels' grid-stride loops take more than one item per thread. Never 0, so an empty
// blob still gives a valid launch (whose loop does nothing).
constexpr long long kCudaMaxBlocks = 16384;
inline int CudaGridBlocks(int64_t n) {
  return static_cast<int>(std::max<long long>(1, std::min<long long>(CudaBlocks(n), kCudaMaxBlocks)));
}

// The index loop every such kernel starts with.
#define CUDA_GRID_STRIDE_LOOP(i, n)                                                   \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace caffe

#endif  // CAFFE_UTIL_CUDA_GRID_CUH_
