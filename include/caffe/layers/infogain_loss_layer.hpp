// Information-gain weighted log loss over probabilities p (classes along `axis`):
//   loss = -sum_{examples} sum_k H[label, k] log(max(p_k, 1e-20)) / normalizer,
// with the infogain matrix H (classes x classes) read from infogain_loss_param.source
// (a binary BlobProto) or given as a third bottom. With H the identity this is the
// multinomial logistic loss. ignore_label and normalization (default VALID) apply.
#ifndef CAFFE_LAYERS_INFOGAIN_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_INFOGAIN_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class InfogainLossLayer : public LossLayer {
 public:
  explicit InfogainLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  // Neither labels nor the infogain matrix get gradients.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  const float* InfogainData(const vector<Blob*>& bottom) const {
    return bottom.size() > 2 ? bottom[2]->cpu_data() : infogain_.cpu_data();
  }
  // Backward gives a gradient for the predictions only: a request for the labels or
  // the infogain matrix is an error naming that bottom.
  void RequirePredictionGradientOnly(const vector<bool>& propagate_down) const;
  // Label at position i of the labels blob, checked to lie in [0, num_labels_).
  int64_t LabelAt(const float* labels, int64_t i) const;
  bool Ignored(const float* labels, int64_t i) const {
    return has_ignore_label_ && static_cast<int>(labels[i]) == ignore_label_;
  }

  Blob infogain_;  // H when read from the source file
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int64_t outer_ = 0;       // product of the axes before `axis`
  int64_t num_labels_ = 0;  // classes: the size of `axis`
  int64_t inner_ = 0;       // product of the axes after `axis`
  float normalizer_ = 1;    // from the last forward pass, for backward
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_INFOGAIN_LOSS_LAYER_HPP_
