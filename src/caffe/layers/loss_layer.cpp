#include "caffe/layers/loss_layer.hpp"

#include <algorithm>

namespace caffe {

void LossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() > 0 && bottom[1]->num_axes() > 0 &&
                bottom[0]->shape(0) == bottom[1]->shape(0))
      << "bottoms '" << bottom_name(0) << "' (" << ShapeToString(bottom[0]->shape())
      << ") and '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must have the same first dimension";
  top[0]->Reshape(vector<int64_t>{});  // a scalar
}

LossParameter::NormalizationMode LossLayer::NormalizationMode() const {
  const LossParameter& p = layer_param_.loss_param();
  if (!p.has_normalization() && p.has_normalize()) {
    return p.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
  }
  return p.normalization();
}

float LossLayer::Normalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner,
                            int64_t valid_count) const {
  double normalizer = 1;
  switch (mode) {
    case LossParameter::FULL:
      normalizer = static_cast<double>(outer * inner);
      break;
    case LossParameter::VALID:
      normalizer = valid_count < 0 ? static_cast<double>(outer * inner)
                                   : static_cast<double>(valid_count);
      break;
    case LossParameter::BATCH_SIZE:
      normalizer = static_cast<double>(outer);
      break;
    case LossParameter::NONE:
      normalizer = 1;
      break;
  }
  // All labels ignored: avoid 0/0 and report a zero loss.
  return static_cast<float>(std::max(1.0, normalizer));
}

}  // namespace caffe
