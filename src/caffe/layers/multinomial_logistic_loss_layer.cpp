#include "caffe/layers/multinomial_logistic_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {
// Probabilities are clamped here so that log(0) cannot produce an infinite loss.
constexpr float kMinProbability = 1e-20f;
}  // namespace

void MultinomialLogisticLossLayer::Reshape(const vector<Blob*>& bottom,
                                           const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  num_ = bottom[0]->shape(0);
  dim_ = num_ == 0 ? 0 : bottom[0]->count() / num_;
  LAYER_REQUIRE(bottom[1]->count() == num_)
      << "labels '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must hold one label per example, " << num_ << " in all";
}

int64_t MultinomialLogisticLossLayer::LabelAt(const float* labels, int64_t n) const {
  const int64_t label = static_cast<int64_t>(labels[n]);
  LAYER_REQUIRE(label >= 0 && label < dim_)
      << "label " << labels[n] << " of example " << n << " in '" << bottom_name(1)
      << "' is outside [0, " << dim_ << ")";
  return label;
}

void MultinomialLogisticLossLayer::Forward_cpu(const vector<Blob*>& bottom,
                                               const vector<Blob*>& top) {
  const float* p = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  double loss = 0;
  for (int64_t n = 0; n < num_; ++n) {
    loss -= std::log(std::max(p[n * dim_ + LabelAt(labels, n)], kMinProbability));
  }
  top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / std::max<int64_t>(num_, 1));
}

void MultinomialLogisticLossLayer::Backward_cpu(const vector<Blob*>& top,
                                                const vector<bool>& propagate_down,
                                                const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the labels '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  const float* p = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  float* dp = bottom[0]->mutable_cpu_diff();
  math::set(bottom[0]->count(), 0.f, dp);
  const float scale = -top[0]->cpu_diff()[0] / std::max<int64_t>(num_, 1);
  for (int64_t n = 0; n < num_; ++n) {
    const int64_t i = n * dim_ + LabelAt(labels, n);
    dp[i] = scale / std::max(p[i], kMinProbability);
  }
}

REGISTER_LAYER_CLASS(MultinomialLogisticLoss);

}  // namespace caffe
