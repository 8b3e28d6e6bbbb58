#include "caffe/layers/sigmoid_cross_entropy_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void SigmoidCrossEntropyLossLayer::LayerSetUp(const vector<Blob*>& bottom,
                                              const vector<Blob*>& top) {
  const LossParameter& p = layer_param_.loss_param();
  has_ignore_label_ = p.has_ignore_label();
  ignore_label_ = p.ignore_label();
  // Unlike the other losses, this one kept BATCH_SIZE as its default when the
  // normalization field was introduced, so old nets train unchanged.
  normalization_ = p.has_normalization() || p.has_normalize() ? NormalizationMode()
                                                               : LossParameter::BATCH_SIZE;
}

void SigmoidCrossEntropyLossLayer::Reshape(const vector<Blob*>& bottom,
                                           const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  LAYER_REQUIRE(bottom[0]->count() == bottom[1]->count())
      << "scores '" << bottom_name(0) << "' (" << ShapeToString(bottom[0]->shape())
      << ") and targets '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must have the same number of elements";
  outer_ = bottom[0]->shape(0);
  inner_ = outer_ == 0 ? 0 : bottom[0]->count() / outer_;
}

void SigmoidCrossEntropyLossLayer::Forward_cpu(const vector<Blob*>& bottom,
                                               const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  const float* t = bottom[1]->cpu_data();
  const int64_t n = bottom[0]->count();
  double loss = 0;
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (has_ignore_label_ && static_cast<int>(t[i]) == ignore_label_) continue;
    loss += std::max(x[i], 0.f) - x[i] * t[i] + std::log1p(std::exp(-std::fabs(x[i])));
    ++valid;
  }
  normalizer_ = Normalizer(normalization_, outer_, inner_, valid);
  top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / normalizer_);
}

void SigmoidCrossEntropyLossLayer::Backward_cpu(const vector<Blob*>& top,
                                                const vector<bool>& propagate_down,
                                                const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the targets '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  const float* x = bottom[0]->cpu_data();
  const float* t = bottom[1]->cpu_data();
  float* dx = bottom[0]->mutable_cpu_diff();
  const float scale = top[0]->cpu_diff()[0] / normalizer_;
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) {
    if (has_ignore_label_ && static_cast<int>(t[i]) == ignore_label_) {
      dx[i] = 0;
      continue;
    }
    // exp of a non-positive argument only, so neither branch overflows.
    const float e = std::exp(-std::fabs(x[i]));
    const float sigmoid = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);
    dx[i] = scale * (sigmoid - t[i]);
  }
}

REGISTER_LAYER_CLASS(SigmoidCrossEntropyLoss);

}  // namespace caffe
