#include "caffe/layers/deconvolution_layer.hpp"

#include "caffe/mode_math.hpp"

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

// Forward is a convolution's backward-data pass, and the data gradient its forward.
void DeconvolutionLayer::ForwardOn(Mode mode, const vector<Blob*>& bottom,
                                   const vector<Blob*>& top) {
  const float* weights = DataOn(mode, *blobs_[0]);
  for (size_t i = 0; i < bottom.size(); ++i) {
    const float* x = DataOn(mode, *bottom[i]);
    float* y = MutableDataOn(mode, top[i]);
    for (int n = 0; n < num_; ++n) {
      BackwardGemm(mode, x + n * bottom_dim_, weights, y + n * top_dim_);
      if (bias_term_) ForwardBias(mode, y + n * top_dim_, DataOn(mode, *blobs_[1]));
    }
  }
}

void DeconvolutionLayer::BackwardOn(Mode mode, const vector<Blob*>& top,
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
      // Both gradients need im2col of the top diff: the weight pass leaves it in the
      // column buffer and the data pass reuses it.
      if (weight_grad) WeightGemm(mode, dy + n * top_dim_, x + n * bottom_dim_, weight_diff);
      if (dx) ForwardGemm(mode, dy + n * top_dim_, weights, dx + n * bottom_dim_, weight_grad);
    }
  }
}

void DeconvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ForwardOn(Mode::CPU, bottom, top);
}

void DeconvolutionLayer::Backward_cpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  BackwardOn(Mode::CPU, top, propagate_down, bottom);
}

#ifdef USE_CUDA
void DeconvolutionLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // n-d im2col exists on the host only.
  ForwardOn(HasGpuPath() ? Mode::GPU : Mode::CPU, bottom, top);
}

void DeconvolutionLayer::Backward_gpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  BackwardOn(HasGpuPath() ? Mode::GPU : Mode::CPU, top, propagate_down, bottom);
}
#endif

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
