// Deconvolution on the device: the loop structure of deconvolution_layer.cpp with the
// base class's GEMM helpers in their cuBLAS form (forward = backward-data of a
// convolution, and the reverse for the data gradient).
#include "caffe/layers/deconvolution_layer.hpp"

namespace caffe {

void DeconvolutionLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!HasGpuPath()) {  // n-d im2col exists on the host only
    Forward_cpu(bottom, top);
    return;
  }
  const float* weights = blobs_[0]->gpu_data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    const float* x = bottom[i]->gpu_data();
    float* y = top[i]->mutable_gpu_data();
    for (int n = 0; n < num_; ++n) {
      BackwardGemmGpu(x + n * bottom_dim_, weights, y + n * top_dim_);
      if (bias_term_) ForwardBiasGpu(y + n * top_dim_, blobs_[1]->gpu_data());
    }
  }
}

void DeconvolutionLayer::Backward_gpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  if (!HasGpuPath()) {
    Backward_cpu(top, propagate_down, bottom);
    return;
  }
  const float* weights = blobs_[0]->gpu_data();
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  for (size_t i = 0; i < top.size(); ++i) {
    const float* dy = top[i]->gpu_diff();
    if (bias_grad) {
      float* bias_diff = blobs_[1]->mutable_gpu_diff();
      for (int n = 0; n < num_; ++n) BackwardBiasGpu(bias_diff, dy + n * top_dim_);
    }
    if (!weight_grad && !propagate_down[i]) continue;
    const float* x = bottom[i]->gpu_data();
    float* dx = propagate_down[i] ? bottom[i]->mutable_gpu_diff() : nullptr;
    float* weight_diff = weight_grad ? blobs_[0]->mutable_gpu_diff() : nullptr;
    for (int n = 0; n < num_; ++n) {
      // The weight pass leaves im2col of the top diff in the column buffer; the data
      // pass reuses it.
      if (weight_grad) WeightGemmGpu(dy + n * top_dim_, x + n * bottom_dim_, weight_diff);
      if (dx) ForwardGemmGpu(dy + n * top_dim_, weights, dx + n * bottom_dim_, weight_grad);
    }
  }
}

}  // namespace caffe
