#include "caffe/layers/softmax_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void SoftmaxLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int axis_param = layer_param_.softmax_param().axis();
  const int num_axes = bottom[0]->num_axes();
  LAYER_REQUIRE(axis_param >= -num_axes && axis_param < num_axes)
      << "softmax_param.axis " << axis_param << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape());
  const int axis = bottom[0]->CanonicalAxisIndex(axis_param);
  outer_ = bottom[0]->count(0, axis);
  channels_ = bottom[0]->shape(axis);
  inner_ = bottom[0]->count(axis + 1);
  top[0]->ReshapeLike(*bottom[0]);
  ResizeScratch(&scratch_, inner_, "the per-position scratch");
}

void SoftmaxLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  if (channels_ == 0) return;
  // Loops run over the inner positions innermost, so memory is read in order.
  for (int64_t o = 0; o < outer_; ++o) {
    const float* xo = x + o * channels_ * inner_;
    float* yo = y + o * channels_ * inner_;
    std::copy(xo, xo + inner_, scratch_.begin());
    for (int64_t c = 1; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) scratch_[i] = std::max(scratch_[i], xo[c * inner_ + i]);
    }
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) {
        yo[c * inner_ + i] = std::exp(xo[c * inner_ + i] - scratch_[i]);
      }
    }
    std::fill(scratch_.begin(), scratch_.end(), 0.f);
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) scratch_[i] += yo[c * inner_ + i];
    }
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) yo[c * inner_ + i] /= scratch_[i];
    }
  }
}

void SoftmaxLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  // dx_c = y_c * (dy_c - sum_k dy_k y_k). The sum is taken before dx is written,
  // so dx may alias dy (in-place use).
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  for (int64_t o = 0; o < outer_; ++o) {
    const int64_t base = o * channels_ * inner_;
    std::fill(scratch_.begin(), scratch_.end(), 0.f);
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) {
        const int64_t k = base + c * inner_ + i;
        scratch_[i] += dy[k] * y[k];
      }
    }
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t i = 0; i < inner_; ++i) {
        const int64_t k = base + c * inner_ + i;
        dx[k] = y[k] * (dy[k] - scratch_[i]);
      }
    }
  }
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
