#include "caffe/layers/softmax_loss_layer.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SoftmaxWithLossLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // With the probabilities as a second top and no loss_weight in the prototxt, only
  // the loss counts toward the objective.
  if (loss_weight_defaulted_ && top.size() == 2 && layer_param_.loss_weight_size() == 1) {
    layer_param_.add_loss_weight(0.f);
  }
  // Created through the registry, in this layer's mode, so that a faster Softmax engine
  // is picked up too (cuDNN's in a GPU net).
  LayerParameter softmax_param;
  softmax_param.set_name(layer_param_.name() + "/softmax");
  softmax_param.set_type("Softmax");
  softmax_param.set_phase(layer_param_.phase());
  *softmax_param.mutable_softmax_param() = layer_param_.softmax_param();
  softmax_layer_ = LayerRegistry::CreateLayer(softmax_param, context());
  softmax_layer_->set_context(shared_context());  // so it runs in this layer's mode
  softmax_bottom_ = {bottom[0]};
  softmax_top_ = {&prob_};
  softmax_layer_->SetUp(softmax_bottom_, softmax_top_);

  const LossParameter& p = layer_param_.loss_param();
  has_ignore_label_ = p.has_ignore_label();
  ignore_label_ = p.ignore_label();
  normalization_ = NormalizationMode();
}

void SoftmaxWithLossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  softmax_layer_->Reshape(softmax_bottom_, softmax_top_);
  const int axis = bottom[0]->CanonicalAxisIndex(layer_param_.softmax_param().axis());
  outer_ = bottom[0]->count(0, axis);
  channels_ = bottom[0]->shape(axis);
  inner_ = bottom[0]->count(axis + 1);
  LAYER_REQUIRE(outer_ * inner_ == bottom[1]->count())
      << "label bottom '" << bottom_name(1) << "' has " << bottom[1]->count()
      << " values (shape " << ShapeToString(bottom[1]->shape()) << "), expected one per "
      << "prediction: " << outer_ * inner_ << " for scores of shape "
      << ShapeToString(bottom[0]->shape()) << " with softmax axis " << axis;
  if (top.size() >= 2) {
    top[1]->ReshapeLike(*bottom[0]);
    top[1]->ShareData(prob_);
  }
}

void SoftmaxWithLossLayer::FailLabelOutOfRange(float label_value, int64_t position) const {
  Fail() << "label " << label_value << " at position " << position << " of bottom '"
         << bottom_name(1) << "' is outside the valid range [0, " << channels_ << ")";
}

void SoftmaxWithLossLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  const float* prob = prob_.cpu_data();
  const float* label = bottom[1]->cpu_data();
  double loss = 0;
  valid_count_ = 0;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const float label_value = label[o * inner_ + i];
      const int c = static_cast<int>(label_value);
      if (IsIgnored(c)) continue;
      if (c < 0 || c >= channels_) FailLabelOutOfRange(label_value, o * inner_ + i);
      // Clamped so that a probability that underflowed to 0 gives a large, finite loss.
      loss -= std::log(std::max(prob[(o * channels_ + c) * inner_ + i], FLT_MIN));
      ++valid_count_;
    }
  }
  top[0]->mutable_cpu_data()[0] =
      static_cast<float>(loss / Normalizer(normalization_, outer_, inner_, valid_count_));
}

void SoftmaxWithLossLayer::Backward_cpu(const vector<Blob*>& top,
                                        const vector<bool>& propagate_down,
                                        const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the label bottom '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  // d loss / d score_c = p_c - [c == label], zero at ignored positions.
  float* dx = bottom[0]->mutable_cpu_diff();
  math::copy(prob_.count(), prob_.cpu_data(), dx);
  const float* label = bottom[1]->cpu_data();
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int c = static_cast<int>(label[o * inner_ + i]);
      if (IsIgnored(c)) {
        for (int64_t k = 0; k < channels_; ++k) dx[(o * channels_ + k) * inner_ + i] = 0;
      } else {
        dx[(o * channels_ + c) * inner_ + i] -= 1;
      }
    }
  }
  const float scale =
      top[0]->cpu_diff()[0] / Normalizer(normalization_, outer_, inner_, valid_count_);
  math::scal(prob_.count(), scale, dx);
}

REGISTER_LAYER_CLASS(SoftmaxWithLoss);

}  // namespace caffe
