// Device path of MultinomialLogisticLossLayer. Labels are checked on the host, as on
// the CPU path (same error message; N numbers, normally produced on the host); the
// probabilities and their gradient stay on the device.
#include <algorithm>

#include "caffe/layers/multinomial_logistic_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Probabilities are clamped here so that log(0) cannot produce an infinite loss (the
// CPU path's constant).
constexpr float kMinProbability = 1e-20f;

// std::max(p, kMinProbability) as the host computes it ((p < min) ? min : p): a NaN
// probability stays NaN, so the loss goes non-finite as on the CPU. fmaxf would return
// the clamp instead and turn a diverged net's NaN into a finite loss.
__device__ inline float ClampProbability(float p) {
  return p < kMinProbability ? kMinProbability : p;
}

struct NegativeLogLikelihoodTerm {
  const float* p;
  const float* labels;
  int64_t dim;
  __device__ double operator()(int64_t, int64_t n) const {
    const int64_t label = static_cast<int64_t>(labels[n]);
    return -log(ClampProbability(p[n * dim + label]));
  }
};

__global__ void MultinomialLogisticBackwardKernel(int64_t num, int64_t dim, float scale,
                                                  const float* p, const float* labels,
                                                  float* dp) {
  CUDA_GRID_STRIDE_LOOP(n, num) {
    const int64_t i = n * dim + static_cast<int64_t>(labels[n]);
    dp[i] = scale / ClampProbability(p[i]);
  }
}

}  // namespace

void MultinomialLogisticLossLayer::Forward_gpu(const vector<Blob*>& bottom,
                                               const vector<Blob*>& top) {
  const float* host_labels = bottom[1]->cpu_data();
  for (int64_t n = 0; n < num_; ++n) LabelAt(host_labels, n);
  SegmentSum(1, num_,
             NegativeLogLikelihoodTerm{bottom[0]->gpu_data(), bottom[1]->gpu_data(), dim_},
             1.0 / std::max<int64_t>(num_, 1), false, top[0]->mutable_gpu_data());
}

void MultinomialLogisticLossLayer::Backward_gpu(const vector<Blob*>& top,
                                                const vector<bool>& propagate_down,
                                                const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the labels '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  float* dp = bottom[0]->mutable_gpu_diff();
  math::gpu_set(bottom[0]->count(), 0.f, dp);
  if (num_ == 0) return;
  const float scale = -top[0]->cpu_diff()[0] / std::max<int64_t>(num_, 1);
  MultinomialLogisticBackwardKernel<<<CudaGridBlocks(num_), kCudaThreads>>>(
      num_, dim_, scale, bottom[0]->gpu_data(), bottom[1]->gpu_data(), dp);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
