// Device-side companion of neuron_layer.hpp, included only by the neuron layers' .cu
// files: one launcher for their elementwise kernels, so the launch shape and the
// launch check live in one place.
#ifndef CAFFE_LAYERS_NEURON_LAYER_CUH_
#define CAFFE_LAYERS_NEURON_LAYER_CUH_

#include <algorithm>
#include <cstdint>

#include "caffe/util/device_alternate.hpp"

namespace caffe {

// A grid-stride loop: each thread handles i, i + grid size, ..., so a bounded grid
// covers any count.
template <typename Op>
__global__ void ElementwiseKernel(int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    op(i);
  }
}

// Runs op(i) for every i in [0, n) on the default stream. Op is a small struct of
// pointers and parameters with a `__device__ void operator()(int64_t i) const`
// (plain structs, since device lambdas would need nvcc's --extended-lambda).
template <typename Op>
void LaunchElementwise(int64_t n, const Op& op) {
  if (n <= 0) return;
  ElementwiseKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, op);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe

#endif  // CAFFE_LAYERS_NEURON_LAYER_CUH_
