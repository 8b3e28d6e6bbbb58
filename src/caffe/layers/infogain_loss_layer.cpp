#include "caffe/layers/infogain_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {
// Probabilities are clamped here so that log(0) cannot produce an infinite loss.
constexpr float kMinProbability = 1e-20f;
}  // namespace

void InfogainLossLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LossParameter& lp = layer_param_.loss_param();
  has_ignore_label_ = lp.has_ignore_label();
  ignore_label_ = lp.ignore_label();
  if (bottom.size() > 2) return;  // H arrives as the third bottom
  const InfogainLossParameter& p = layer_param_.infogain_loss_param();
  LAYER_REQUIRE(p.has_source())
      << "infogain_loss_param.source must name the infogain matrix file (or give it as a "
         "third bottom)";
  try {
    BlobProto proto;
    ReadProtoFromBinaryFile(p.source(), &proto);
    infogain_.FromProto(proto);
  } catch (const Error& e) {
    Fail() << "cannot load the infogain matrix: " << e.what();
  }
}

void InfogainLossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  const Blob& probs = *bottom[0];
  const int axis_param = layer_param_.infogain_loss_param().axis();
  LAYER_REQUIRE(axis_param >= -probs.num_axes() && axis_param < probs.num_axes())
      << "infogain_loss_param.axis " << axis_param << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(probs.shape());
  const int axis = probs.CanonicalAxisIndex(axis_param);
  outer_ = probs.count(0, axis);
  num_labels_ = probs.shape(axis);
  inner_ = probs.count(axis + 1);
  LAYER_REQUIRE(bottom[1]->count() == outer_ * inner_)
      << "labels '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must hold " << outer_ * inner_ << " labels, one per prediction of '"
      << bottom_name(0) << "' (" << ShapeToString(probs.shape()) << ", classes on axis "
      << axis << ")";
  const Blob& h = bottom.size() > 2 ? *bottom[2] : infogain_;
  LAYER_REQUIRE(h.count() == num_labels_ * num_labels_)
      << "the infogain matrix" << (bottom.size() > 2 ? " '" + bottom_name(2) + "'" : string())
      << " has shape " << ShapeToString(h.shape()) << "; expected " << num_labels_ << "x"
      << num_labels_ << " for " << num_labels_ << " classes";
}

int64_t InfogainLossLayer::LabelAt(const float* labels, int64_t i) const {
  const int64_t label = static_cast<int64_t>(labels[i]);
  LAYER_REQUIRE(label >= 0 && label < num_labels_)
      << "label " << labels[i] << " at position " << i << " of '" << bottom_name(1)
      << "' is outside [0, " << num_labels_ << ")";
  return label;
}

void InfogainLossLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* p = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  const float* h = InfogainData(bottom);
  double loss = 0;
  int64_t valid = 0;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int64_t pos = o * inner_ + i;
      if (Ignored(labels, pos)) continue;
      const float* h_row = h + LabelAt(labels, pos) * num_labels_;
      const float* p_col = p + o * num_labels_ * inner_ + i;
      for (int64_t k = 0; k < num_labels_; ++k) {
        loss -= h_row[k] * std::log(std::max(p_col[k * inner_], kMinProbability));
      }
      ++valid;
    }
  }
  normalizer_ = Normalizer(NormalizationMode(), outer_, inner_, valid);
  top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / normalizer_);
}

void InfogainLossLayer::RequirePredictionGradientOnly(
    const vector<bool>& propagate_down) const {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the labels '" << bottom_name(1) << "'";
  LAYER_REQUIRE(propagate_down.size() < 3 || !propagate_down[2])
      << "cannot backpropagate to the infogain matrix '" << bottom_name(2) << "'";
}

void InfogainLossLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  RequirePredictionGradientOnly(propagate_down);
  if (!propagate_down[0]) return;
  const float* p = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  const float* h = InfogainData(bottom);
  float* dp = bottom[0]->mutable_cpu_diff();
  math::set(bottom[0]->count(), 0.f, dp);
  const float scale = -top[0]->cpu_diff()[0] / normalizer_;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int64_t pos = o * inner_ + i;
      if (Ignored(labels, pos)) continue;
      const float* h_row = h + LabelAt(labels, pos) * num_labels_;
      const int64_t base = o * num_labels_ * inner_ + i;
      for (int64_t k = 0; k < num_labels_; ++k) {
        const int64_t idx = base + k * inner_;
        dp[idx] = scale * h_row[k] / std::max(p[idx], kMinProbability);
      }
    }
  }
}

REGISTER_LAYER_CLASS(InfogainLoss);

}  // namespace caffe
