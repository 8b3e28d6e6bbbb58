// Device path of TileLayer: top block (i, t) is a copy of bottom block i, and a
// bottom element's gradient is the sum over its tiles_ copies.
#include "caffe/layers/tile_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// One thread per top element.
__global__ void TileForwardKernel(int64_t n, int64_t inner, int64_t tiles, const float* x,
                                  float* y) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t block = i / inner;  // i.e. outer index * tiles + tile
    y[i] = x[(block / tiles) * inner + i % inner];
  }
}

// One thread per bottom element, adding its copies in tile order (as the CPU does),
// so the sum is deterministic without atomics.
__global__ void TileBackwardKernel(int64_t n, int64_t inner, int64_t tiles, const float* dy,
                                   float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const float* first = dy + (i / inner) * tiles * inner + i % inner;
    float sum = first[0];
    for (int64_t t = 1; t < tiles; ++t) sum += first[t * inner];
    dx[i] = sum;
  }
}

}  // namespace

void TileLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = top[0]->count();
  if (count == 0) return;
  TileForwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, inner_, tiles_, bottom[0]->gpu_data(), top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void TileLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  if (count == 0) return;
  TileBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, inner_, tiles_, top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
