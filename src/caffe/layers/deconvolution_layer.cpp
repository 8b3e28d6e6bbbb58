#include "caffe/layers/deconvolution_layer.hpp"

namespace caffe {

void DeconvolutionLayer::ComputeOutputShape(const vector<int64_t>& input_spatial) {
  output_shape_.clear();
  for (int i = 0; i < num_spatial_axes_; ++i) {
    const int64_t extent = static_cast<int64_t>(dilation_[i]) * (kernel_shape_[i] - 1) + 1;
    const int64_t out = (input_spatial[i] - 1) * stride_[i] + extent - 2 * int64_t{pad_[i]};
    LAYER_REQUIRE(out > 0) << "pad " << pad_[i] << " leaves no output on axis "
                           << channel_axis_ + 1 + i << ": (" << input_spatial[i] << " - 1) * "
                           << stride_[i] << " + " << extent << " - 2 * " << pad_[i] << " = "
                           << out;
    output_shape_.push_back(static_cast<int>(out));
  }
}

void DeconvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* weights = blobs_[0]->cpu_data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    const float* x = bottom[i]->cpu_data();
    float* y = top[i]->mutable_cpu_data();
    for (int n = 0; n < num_; ++n) {
      BackwardGemm(x + n * bottom_dim_, weights, y + n * top_dim_);
      if (bias_term_) ForwardBias(y + n * top_dim_, blobs_[1]->cpu_data());
    }
  }
}

void DeconvolutionLayer::Backward_cpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  const float* weights = blobs_[0]->cpu_data();
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  for (size_t i = 0; i < top.size(); ++i) {
    const float* dy = top[i]->cpu_diff();
    if (bias_grad) {
      float* bias_diff = blobs_[1]->mutable_cpu_diff();
      for (int n = 0; n < num_; ++n) BackwardBias(bias_diff, dy + n * top_dim_);
    }
    if (!weight_grad && !propagate_down[i]) continue;
    const float* x = bottom[i]->cpu_data();
    float* dx = propagate_down[i] ? bottom[i]->mutable_cpu_diff() : nullptr;
    float* weight_diff = weight_grad ? blobs_[0]->mutable_cpu_diff() : nullptr;
    for (int n = 0; n < num_; ++n) {
      // Both gradients need im2col of the top diff: the weight pass leaves it in the
      // column buffer and the data pass reuses it.
      if (weight_grad) WeightGemm(dy + n * top_dim_, x + n * bottom_dim_, weight_diff);
      if (dx) ForwardGemm(dy + n * top_dim_, weights, dx + n * bottom_dim_, weight_grad);
    }
  }
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
