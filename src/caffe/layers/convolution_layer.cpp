#include "caffe/layers/convolution_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void ConvolutionLayer::ComputeOutputShape(const vector<int64_t>& input_spatial) {
  output_shape_.clear();
  for (int i = 0; i < num_spatial_axes_; ++i) {
    const int64_t extent = static_cast<int64_t>(dilation_[i]) * (kernel_shape_[i] - 1) + 1;
    const int64_t padded = input_spatial[i] + 2 * static_cast<int64_t>(pad_[i]);
    LAYER_REQUIRE(extent <= padded)
        << "kernel " << extent
        << (dilation_[i] > 1 ? " (dilated " + std::to_string(kernel_shape_[i]) + " by " +
                                   std::to_string(dilation_[i]) + ")"
                             : string())
        << " exceeds padded input " << padded << " on axis " << channel_axis_ + 1 + i
        << " of bottom '" << bottom_name(0) << "'";
    output_shape_.push_back(static_cast<int>((padded - extent) / stride_[i] + 1));
  }
}

void ConvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* weights = blobs_[0]->cpu_data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    const float* x = bottom[i]->cpu_data();
    float* y = top[i]->mutable_cpu_data();
    for (int n = 0; n < num_; ++n) {
      ForwardGemm(x + n * bottom_dim_, weights, y + n * top_dim_);
      if (bias_term_) ForwardBias(y + n * top_dim_, blobs_[1]->cpu_data());
    }
  }
}

void ConvolutionLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
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
      if (weight_grad) WeightGemm(x + n * bottom_dim_, dy + n * top_dim_, weight_diff);
      if (dx) BackwardGemm(dy + n * top_dim_, weights, dx + n * bottom_dim_);
    }
  }
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
