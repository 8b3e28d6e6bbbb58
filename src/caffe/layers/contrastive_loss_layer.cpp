#include "caffe/layers/contrastive_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {
// Keeps the dissimilar-pair gradient finite when the two embeddings coincide.
constexpr float kDistanceFloor = 1e-4f;
}  // namespace

void ContrastiveLossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  LAYER_REQUIRE(bottom[0]->count() == bottom[1]->count())
      << "the pair '" << bottom_name(0) << "' (" << ShapeToString(bottom[0]->shape())
      << ") and '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must have the same shape";
  num_ = bottom[0]->shape(0);
  dim_ = num_ == 0 ? 0 : bottom[0]->count() / num_;
  LAYER_REQUIRE(bottom[2]->count() == num_)
      << "similarity labels '" << bottom_name(2) << "' (" << ShapeToString(bottom[2]->shape())
      << ") must hold one label per pair, " << num_ << " in all";
  diff_.ReshapeLike(*bottom[0]);
  ResizeScratch(&dist_sq_, num_, "the per-pair distances");
}

void ContrastiveLossLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ContrastiveLossParameter& p = layer_param_.contrastive_loss_param();
  const float margin = p.margin();
  const float* similar = bottom[2]->cpu_data();
  math::sub(bottom[0]->count(), bottom[0]->cpu_data(), bottom[1]->cpu_data(),
            diff_.mutable_cpu_data());
  const float* diff = diff_.cpu_data();
  double loss = 0;
  for (int64_t n = 0; n < num_; ++n) {
    dist_sq_[n] = math::dot(dim_, diff + n * dim_, diff + n * dim_);
    if (static_cast<int>(similar[n]) != 0) {
      loss += dist_sq_[n];
    } else if (p.legacy_version()) {
      loss += std::max(margin - dist_sq_[n], 0.f);
    } else {
      const double gap = std::max(margin - std::sqrt(dist_sq_[n]), 0.f);
      loss += gap * gap;
    }
  }
  top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / (2.0 * std::max<int64_t>(num_, 1)));
}

void ContrastiveLossLayer::Backward_cpu(const vector<Blob*>& top,
                                        const vector<bool>& propagate_down,
                                        const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[2])
      << "cannot backpropagate to the similarity labels '" << bottom_name(2) << "'";
  const ContrastiveLossParameter& p = layer_param_.contrastive_loss_param();
  const float margin = p.margin();
  const float* similar = bottom[2]->cpu_data();
  const float* diff = diff_.cpu_data();
  for (int side = 0; side < 2; ++side) {
    if (!propagate_down[side]) continue;
    // d loss / d a = g (a - b) * factor; b gets the opposite sign.
    const float g = (side == 0 ? 1.f : -1.f) * top[0]->cpu_diff()[0] /
                    static_cast<float>(std::max<int64_t>(num_, 1));
    float* dx = bottom[side]->mutable_cpu_diff();
    for (int64_t n = 0; n < num_; ++n) {
      float factor;
      if (static_cast<int>(similar[n]) != 0) {
        factor = 1;
      } else if (p.legacy_version()) {
        factor = margin - dist_sq_[n] > 0 ? -1.f : 0.f;
      } else {
        const float dist = std::sqrt(dist_sq_[n]);
        const float gap = margin - dist;
        factor = gap > 0 ? -gap / (dist + kDistanceFloor) : 0.f;
      }
      math::scale(dim_, g * factor, diff + n * dim_, dx + n * dim_);
    }
  }
}

REGISTER_LAYER_CLASS(ContrastiveLoss);

}  // namespace caffe
