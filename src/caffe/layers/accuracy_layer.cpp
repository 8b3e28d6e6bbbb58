#include "caffe/layers/accuracy_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void AccuracyLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const AccuracyParameter& p = layer_param_.accuracy_param();
  top_k_ = p.top_k();
  LAYER_REQUIRE(top_k_ >= 1) << "accuracy_param.top_k must be at least 1, found " << top_k_;
  has_ignore_label_ = p.has_ignore_label();
  ignore_label_ = p.ignore_label();
}

void AccuracyLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int axis_param = layer_param_.accuracy_param().axis();
  const int num_axes = bottom[0]->num_axes();
  LAYER_REQUIRE(axis_param >= -num_axes && axis_param < num_axes)
      << "accuracy_param.axis " << axis_param << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape());
  const int axis = bottom[0]->CanonicalAxisIndex(axis_param);
  outer_ = bottom[0]->count(0, axis);
  classes_ = bottom[0]->shape(axis);
  inner_ = bottom[0]->count(axis + 1);
  LAYER_REQUIRE(top_k_ <= classes_) << "accuracy_param.top_k (" << top_k_
                                    << ") exceeds the number of classes (" << classes_ << ")";
  LAYER_REQUIRE(outer_ * inner_ == bottom[1]->count())
      << "label bottom '" << bottom_name(1) << "' has " << bottom[1]->count()
      << " values (shape " << ShapeToString(bottom[1]->shape()) << "), expected one per "
      << "prediction: " << outer_ * inner_ << " for scores of shape "
      << ShapeToString(bottom[0]->shape()) << " with class axis " << axis;
  top[0]->Reshape(vector<int64_t>{});
  if (top.size() > 1) top[1]->Reshape(vector<int64_t>{classes_});
  class_counts_.assign(classes_, 0);
}

void AccuracyLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* scores = bottom[0]->cpu_data();
  const float* label = bottom[1]->cpu_data();
  float* per_class = top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr;
  if (per_class) std::fill_n(per_class, classes_, 0.f);
  std::fill(class_counts_.begin(), class_counts_.end(), 0);
  int64_t correct = 0;
  int64_t counted = 0;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const float label_value = label[o * inner_ + i];
      const int c = static_cast<int>(label_value);
      if (has_ignore_label_ && c == ignore_label_) continue;
      LAYER_REQUIRE(c >= 0 && c < classes_)
          << "label " << label_value << " at position " << o * inner_ + i << " of bottom '"
          << bottom_name(1) << "' is outside the valid range [0, " << classes_ << ")";
      ++counted;
      ++class_counts_[c];
      const float* s = scores + o * classes_ * inner_ + i;
      const float true_score = s[c * inner_];
      // Another class scoring as high as the true one counts as ahead of it (as in
      // BVLC Caffe): a net whose outputs are all equal, e.g. an untrained BatchNorm
      // net at test time, scores 0%, not 100%. NaN compares false with everything,
      // so a diverged net would otherwise score 100% too: any NaN score is wrong.
      bool defined = !std::isnan(true_score);
      int64_t ahead = 0;
      for (int64_t k = 0; k < classes_ && defined; ++k) {
        if (std::isnan(s[k * inner_])) defined = false;
        if (k != c && s[k * inner_] >= true_score) ++ahead;
      }
      if (defined && ahead < top_k_) {
        ++correct;
        if (per_class) per_class[c] += 1;
      }
    }
  }
  // With every label ignored there is nothing to measure; report 0 rather than NaN.
  top[0]->mutable_cpu_data()[0] = counted == 0 ? 0.f : static_cast<float>(correct) / counted;
  if (per_class) {
    for (int64_t c = 0; c < classes_; ++c) {
      per_class[c] = class_counts_[c] == 0 ? 0.f : per_class[c] / class_counts_[c];
    }
  }
}

void AccuracyLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                 const vector<Blob*>& bottom) {
  for (size_t i = 0; i < propagate_down.size(); ++i) {
    LAYER_REQUIRE(!propagate_down[i])
        << "accuracy has no gradient, but backward was requested for bottom '"
        << bottom_name(static_cast<int>(i)) << "'";
  }
}

REGISTER_LAYER_CLASS(Accuracy);

}  // namespace caffe
