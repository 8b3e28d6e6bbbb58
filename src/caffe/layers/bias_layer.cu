// Device path of BiasLayer: x is viewed as outer x dim x inner, the bias indexed by
// the middle coordinate.
#include "caffe/layers/bias_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

__global__ void BiasForwardKernel(int64_t n, int64_t dim, int64_t inner, const float* x,
                                  const float* bias, float* y) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    y[i] = x[i] + bias[(i / inner) % dim];
  }
}

// Term j of bias entry d's gradient: dy at (o, d, i) with j = o * inner + i.
struct BiasGradientTerm {
  const float* dy;
  int64_t dim, inner;
  __device__ double operator()(int64_t d, int64_t j) const {
    return dy[((j / inner) * dim + d) * inner + j % inner];
  }
};

}  // namespace

void BiasLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* bias = (bottom.size() > 1 ? bottom[1] : blobs_[0].get())->gpu_data();
  const int64_t count = top[0]->count();
  BiasForwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, dim_, inner_, bottom[0]->gpu_data(), bias, top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void BiasLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  const float* dy = top[0]->gpu_diff();
  const bool from_bottom = bottom.size() > 1;
  // The bias gradient first: in place, dx overwrites dy.
  if (from_bottom ? propagate_down[1] : param_propagate_down(0)) {
    // A bias bottom's diff is overwritten; a learned bias accumulates.
    float* db = from_bottom ? bottom[1]->mutable_gpu_diff() : blobs_[0]->mutable_gpu_diff();
    SegmentSum(dim_, outer_ * inner_, BiasGradientTerm{dy, dim_, inner_}, 1.0, !from_bottom, db);
  }
  if (propagate_down[0]) math::gpu_copy(bottom[0]->count(), dy, bottom[0]->mutable_gpu_diff());
}

}  // namespace caffe
