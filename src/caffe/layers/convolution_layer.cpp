#include "caffe/layers/convolution_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/mode_math.hpp"

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

void ConvolutionLayer::ForwardOn(Mode mode, const vector<Blob*>& bottom,
                                 const vector<Blob*>& top) {
  const float* weights = DataOn(mode, *blobs_[0]);
  for (size_t i = 0; i < bottom.size(); ++i) {
    const float* x = DataOn(mode, *bottom[i]);
    float* y = MutableDataOn(mode, top[i]);
    for (int n = 0; n < num_; ++n) {
      ForwardGemm(mode, x + n * bottom_dim_, weights, y + n * top_dim_);
      if (bias_term_) ForwardBias(mode, y + n * top_dim_, DataOn(mode, *blobs_[1]));
    }
  }
}

void ConvolutionLayer::BackwardOn(Mode mode, const vector<Blob*>& top,
                                  const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  const float* weights = DataOn(mode, *blobs_[0]);
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  for (size_t i = 0; i < top.size(); ++i) {
    const float* dy = DiffOn(mode, *top[i]);
    if (bias_grad) {
      float* bias_diff = MutableDiffOn(mode, blobs_[1].get());
      for (int n = 0; n < num_; ++n) BackwardBias(mode, bias_diff, dy + n * top_dim_);
    }
    if (!weight_grad && !propagate_down[i]) continue;
    const float* x = DataOn(mode, *bottom[i]);
    float* dx = propagate_down[i] ? MutableDiffOn(mode, bottom[i]) : nullptr;
    float* weight_diff = weight_grad ? MutableDiffOn(mode, blobs_[0].get()) : nullptr;
    for (int n = 0; n < num_; ++n) {
      if (weight_grad) WeightGemm(mode, x + n * bottom_dim_, dy + n * top_dim_, weight_diff);
      if (dx) BackwardGemm(mode, dy + n * top_dim_, weights, dx + n * bottom_dim_);
    }
  }
}

void ConvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ForwardOn(Mode::CPU, bottom, top);
}

void ConvolutionLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                    const vector<Blob*>& bottom) {
  BackwardOn(Mode::CPU, top, propagate_down, bottom);
}

#ifdef USE_CUDA
void ConvolutionLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // n-d im2col exists on the host only.
  ForwardOn(HasGpuPath() ? Mode::GPU : Mode::CPU, bottom, top);
}

void ConvolutionLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                    const vector<Blob*>& bottom) {
  BackwardOn(HasGpuPath() ? Mode::GPU : Mode::CPU, top, propagate_down, bottom);
}
#endif

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
