// Base of loss layers: two bottoms (prediction, target) with matching outer
// dimension, one scalar top weighted by loss_weight (default 1).
#ifndef CAFFE_LAYERS_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_LOSS_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class LossLayer : public Layer {
 public:
  explicit LossLayer(const LayerParameter& param) : Layer(param) {
    // A loss counts toward the objective unless told otherwise.
    if (layer_param_.loss_weight_size() == 0) layer_param_.add_loss_weight(1.f);
  }
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // The net may create the scalar top itself when the prototxt names none.
  bool AutoTopBlobs() const override { return true; }
  // Labels and targets in the second bottom get no gradient by default.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

 protected:
  // The divisor for the chosen normalization mode; `valid_count` < 0 means "all".
  float Normalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner,
                   int64_t valid_count) const;
  LossParameter::NormalizationMode NormalizationMode() const;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_LOSS_LAYER_HPP_
