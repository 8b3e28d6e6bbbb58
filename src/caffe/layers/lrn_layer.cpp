#include "caffe/layers/lrn_layer.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

namespace {

// out row i = sum of `in` rows [i - half, i + half] clipped to [0, length); every
// row holds `inner` contiguous floats. A running sum keeps it O(length * inner).
void SlidingRowSum(const float* in, int64_t length, int64_t inner, int half, float* out) {
  std::fill_n(out, inner, 0.f);
  for (int64_t j = 0; j <= std::min<int64_t>(half, length - 1); ++j) {
    const float* src = in + j * inner;
    for (int64_t k = 0; k < inner; ++k) out[k] += src[k];
  }
  for (int64_t i = 1; i < length; ++i) {
    const float* prev = out + (i - 1) * inner;
    float* row = out + i * inner;
    const float* entering = i + half < length ? in + (i + half) * inner : nullptr;
    const float* leaving = i - half - 1 >= 0 ? in + (i - half - 1) * inner : nullptr;
    for (int64_t k = 0; k < inner; ++k) {
      row[k] = prev[k] + (entering ? entering[k] : 0.f) - (leaving ? leaving[k] : 0.f);
    }
  }
}

}  // namespace

void LRNLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LRNParameter& p = layer_param_.lrn_param();
  LAYER_REQUIRE(p.local_size() % 2 == 1)
      << "lrn_param.local_size must be odd, found " << p.local_size();
  // Unsigned in the proto: past INT_MAX it would become a negative window.
  LAYER_REQUIRE(p.local_size() <= static_cast<uint32_t>(INT_MAX))
      << "lrn_param.local_size " << p.local_size() << " is too large";
  size_ = static_cast<int>(p.local_size());
  half_ = (size_ - 1) / 2;
  alpha_ = p.alpha();
  beta_ = p.beta();
  across_channels_ = p.norm_region() == LRNParameter::ACROSS_CHANNELS;
  k_ = across_channels_ ? p.k() : 1.f;
  window_count_ = across_channels_ ? static_cast<float>(size_) : static_cast<float>(size_) * size_;
}

void LRNLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() == 4)
      << "bottom '" << bottom_name(0) << "' must be 4-d (N x C x H x W), found shape "
      << ShapeToString(bottom[0]->shape());
  // Backward reads x and y together.
  LAYER_REQUIRE(top[0] != bottom[0]) << "cannot run in place (top '" << top_name(0)
                                      << "' is its bottom)";
  num_ = bottom[0]->shape(0);
  channels_ = bottom[0]->shape(1);
  height_ = bottom[0]->shape(2);
  width_ = bottom[0]->shape(3);
  top[0]->ReshapeLike(*bottom[0]);
  scale_.ReshapeLike(*bottom[0]);
  scratch_.ReshapeLike(*bottom[0]);
  if (!across_channels_) partial_.Reshape({height_, width_});
}

void LRNLayer::WindowSum(const float* in, float* out) {
  const int64_t plane = height_ * width_;
  if (across_channels_) {
    for (int64_t n = 0; n < num_; ++n) {
      const int64_t base = n * channels_ * plane;
      SlidingRowSum(in + base, channels_, plane, half_, out + base);
    }
    return;
  }
  // The square window is separable: sum along each row, then down the columns.
  float* partial = partial_.mutable_cpu_data();
  for (int64_t p = 0; p < num_ * channels_; ++p) {
    const float* src = in + p * plane;
    for (int64_t h = 0; h < height_; ++h) {
      SlidingRowSum(src + h * width_, width_, 1, half_, partial + h * width_);
    }
    SlidingRowSum(partial, height_, width_, half_, out + p * plane);
  }
}

void LRNLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  const float* x = bottom[0]->cpu_data();
  float* squares = scratch_.mutable_cpu_data();
  for (int64_t i = 0; i < count; ++i) squares[i] = x[i] * x[i];
  float* scale = scale_.mutable_cpu_data();
  WindowSum(squares, scale);
  const float alpha_over_n = alpha_ / window_count_;
  float* y = top[0]->mutable_cpu_data();
  for (int64_t i = 0; i < count; ++i) {
    scale[i] = k_ + alpha_over_n * scale[i];
    y[i] = x[i] * std::pow(scale[i], -beta_);
  }
}

// With r_q = dy_q * y_q / scale_q, dx_p = dy_p * scale_p^-beta
//   - 2 alpha beta / n * x_p * (sum of r_q over the window around p):
// p lies in q's window exactly when q lies in p's, so the same window sum serves.
void LRNLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  const float* x = bottom[0]->cpu_data();
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  const float* scale = scale_.cpu_data();
  float* ratio = scratch_.mutable_cpu_data();
  for (int64_t i = 0; i < count; ++i) ratio[i] = dy[i] * y[i] / scale[i];
  float* dx = bottom[0]->mutable_cpu_diff();
  WindowSum(ratio, dx);
  const float factor = 2.f * alpha_ * beta_ / window_count_;
  for (int64_t i = 0; i < count; ++i) {
    dx[i] = dy[i] * std::pow(scale[i], -beta_) - factor * x[i] * dx[i];
  }
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
