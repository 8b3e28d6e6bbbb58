// Device path of ScaleLayer: x is viewed as outer x dim x inner, the scale (and bias)
// indexed by the middle coordinate.
#include "caffe/layers/scale_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// y = x * s + b; bias may be null. Safe in place (each element reads its own x).
__global__ void ScaleForwardKernel(int64_t n, int64_t dim, int64_t inner, const float* x,
                                   const float* scale, const float* bias, float* y) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t d = (i / inner) % dim;
    y[i] = x[i] * scale[d] + (bias ? bias[d] : 0.f);
  }
}

__global__ void ScaleBackwardKernel(int64_t n, int64_t dim, int64_t inner, const float* dy,
                                    const float* scale, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    dx[i] = dy[i] * scale[(i / inner) % dim];
  }
}

// Term j of scale entry d's gradient: dy * x (or dy alone, for the bias) at position
// (o, d, i) with j = o * inner + i. With mean and inv_std, x is what a normalizing
// producer kept, and the Scale's input was (x - mean[d]) * inv_std[d].
struct ScaleGradientTerm {
  const float* dy;
  const float* x;  // null: the bias gradient
  int64_t dim, inner;
  const float* mean = nullptr;
  const float* inv_std = nullptr;
  __device__ double operator()(int64_t d, int64_t j) const {
    const int64_t index = ((j / inner) * dim + d) * inner + j % inner;
    if (!x) return double(dy[index]);
    const float input = mean ? (x[index] - mean[d]) * inv_std[d] : x[index];
    return double(dy[index]) * input;
  }
};

}  // namespace

void ScaleLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  borrowed_input_ = nullptr;  // host values are no use here
  borrowed_device_input_ = {};
  const int64_t count = top[0]->count();
  // In place, the scale gradient still needs x. A producer that keeps x per channel
  // (BatchNorm) serves it; else keep a copy before it is overwritten.
  if (bottom[0] == top[0]) {
    if (input_producer_ && axis_ == 1) {
      const KeptDeviceTop kept = input_producer_->KeptTopValuesGpu();
      if (kept.values && kept.channels == dim_) borrowed_device_input_ = kept;
    }
    if (!borrowed_device_input_.values) {
      math::gpu_copy(count, bottom[0]->gpu_data(), saved_input_.mutable_gpu_data());
    }
  }
  const float* bias = bias_term_ ? blobs_[bias_param_id_]->gpu_data() : nullptr;
  ScaleForwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, dim_, inner_, bottom[0]->gpu_data(), scale_blob(bottom)->gpu_data(), bias,
      top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void ScaleLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const float* dy = top[0]->gpu_diff();
  const bool scale_from_bottom = bottom.size() > 1;
  const bool scale_grad = scale_from_bottom ? propagate_down[1] : param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(bias_param_id_);
  // Parameter gradients first: in place, dx overwrites dy.
  if (scale_grad) {
    ScaleGradientTerm term{dy, bottom[0]->gpu_data(), dim_, inner_};
    if (borrowed_device_input_.values) {
      term.x = borrowed_device_input_.values;
      term.mean = borrowed_device_input_.mean;
      term.inv_std = borrowed_device_input_.inv_std;
    } else if (bottom[0] == top[0]) {
      term.x = saved_input_.gpu_data();
    }
    // A scale bottom's diff is overwritten; a learned scale accumulates.
    float* ds = scale_from_bottom ? bottom[1]->mutable_gpu_diff() : blobs_[0]->mutable_gpu_diff();
    SegmentSum(dim_, outer_ * inner_, term, 1.0, !scale_from_bottom, ds);
  }
  if (bias_grad) {
    SegmentSum(dim_, outer_ * inner_, ScaleGradientTerm{dy, nullptr, dim_, inner_}, 1.0, true,
               blobs_[bias_param_id_]->mutable_gpu_diff());
  }
  if (propagate_down[0]) {
    const int64_t count = top[0]->count();
    ScaleBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
        count, dim_, inner_, dy, scale_blob(bottom)->gpu_data(), bottom[0]->mutable_gpu_diff());
    CUDA_CHECK(cudaPeekAtLastError());
  }
}

}  // namespace caffe
