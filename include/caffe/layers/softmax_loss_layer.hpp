// Multinomial logistic loss of a softmax: bottom[0] holds scores (softmax over
// softmax_param.axis), bottom[1] the class index of each position as a float, with
// shape outer x inner (e.g. N, or N x H x W for dense prediction). The loss is
// -sum log p(label) over the non-ignored positions, divided per
// loss_param.normalization. An optional second top exposes the probabilities;
// it takes no gradient.
#ifndef CAFFE_LAYERS_SOFTMAX_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_SOFTMAX_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class SoftmaxWithLossLayer : public LossLayer {
 public:
  explicit SoftmaxWithLossLayer(const LayerParameter& param)
      : LossLayer(param), loss_weight_defaulted_(param.loss_weight_size() == 0) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "SoftmaxWithLoss"; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  bool IsIgnored(int label) const { return has_ignore_label_ && label == ignore_label_; }
  // Throws the error for a label outside [0, channels) at `position` of bottom[1].
  void FailLabelOutOfRange(float label_value, int64_t position) const;

  bool loss_weight_defaulted_;  // the prototxt gave no loss_weight
  shared_ptr<Layer> softmax_layer_;
  Blob prob_;
  vector<Blob*> softmax_bottom_;
  vector<Blob*> softmax_top_;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t outer_ = 0;
  int64_t channels_ = 0;
  int64_t inner_ = 0;
  int64_t valid_count_ = 0;  // positions counted by the last Forward
#ifdef USE_CUDA
  // Per position (outer x inner): data = -log p(label) (0 where not counted), diff = 1
  // counted, 0 ignored, -1 label out of range.
  Blob position_loss_;
  // Their sums in double, by one fixed-order reduction: loss, counted, out of range.
  SyncedMemory loss_totals_{3 * sizeof(double)};
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SOFTMAX_LOSS_LAYER_HPP_
