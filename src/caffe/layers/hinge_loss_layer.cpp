#include "caffe/layers/hinge_loss_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"

namespace caffe {

void HingeLossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  num_ = bottom[0]->shape(0);
  dim_ = num_ == 0 ? 0 : bottom[0]->count() / num_;
  LAYER_REQUIRE(bottom[1]->count() == num_)
      << "labels '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must hold one label per example, " << num_ << " in all";
}

int64_t HingeLossLayer::LabelAt(const float* labels, int64_t n) const {
  const int64_t label = static_cast<int64_t>(labels[n]);
  LAYER_REQUIRE(label >= 0 && label < dim_)
      << "label " << labels[n] << " of example " << n << " in '" << bottom_name(1)
      << "' is outside [0, " << dim_ << ")";
  return label;
}

void HingeLossLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const bool l2 = layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  const float* x = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  double loss = 0;
  for (int64_t n = 0; n < num_; ++n) {
    const int64_t label = LabelAt(labels, n);
    for (int64_t k = 0; k < dim_; ++k) {
      const float score = x[n * dim_ + k];
      const double margin = std::max(0.f, 1 + (k == label ? -score : score));
      loss += l2 ? margin * margin : margin;
    }
  }
  top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / std::max<int64_t>(num_, 1));
}

void HingeLossLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the labels '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  const bool l2 = layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  const float* x = bottom[0]->cpu_data();
  const float* labels = bottom[1]->cpu_data();
  float* dx = bottom[0]->mutable_cpu_diff();
  const float scale = top[0]->cpu_diff()[0] / std::max<int64_t>(num_, 1);
  for (int64_t n = 0; n < num_; ++n) {
    const int64_t label = LabelAt(labels, n);
    for (int64_t k = 0; k < dim_; ++k) {
      const int64_t i = n * dim_ + k;
      const float sign = k == label ? -1.f : 1.f;
      const float margin = 1 + sign * x[i];
      if (margin <= 0) {
        dx[i] = 0;
      } else {
        dx[i] = scale * sign * (l2 ? 2 * margin : 1.f);
      }
    }
  }
}

REGISTER_LAYER_CLASS(HingeLoss);

}  // namespace caffe
