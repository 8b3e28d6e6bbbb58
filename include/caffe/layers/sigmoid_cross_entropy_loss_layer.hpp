// Cross entropy between sigmoid(x) and targets t in [0, 1], summed over all elements:
//   loss = sum -[t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))]
//        = sum max(x, 0) - x t + log(1 + exp(-|x|)),
// the second form never overflows. The sigmoid is computed inline. Targets equal
// to ignore_label are skipped. Normalization follows BVLC Caffe: with neither
// `normalization` nor the legacy `normalize` set it divides by the batch size.
#ifndef CAFFE_LAYERS_SIGMOID_CROSS_ENTROPY_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_SIGMOID_CROSS_ENTROPY_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class SigmoidCrossEntropyLossLayer : public LossLayer {
 public:
  explicit SigmoidCrossEntropyLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "SigmoidCrossEntropyLoss"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::BATCH_SIZE;
  int64_t outer_ = 0;
  int64_t inner_ = 0;
  float normalizer_ = 1;  // from the last forward pass, for backward
#ifdef USE_CUDA
  Blob sums_gpu_;  // the loss sum and the valid count, computed on the device
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SIGMOID_CROSS_ENTROPY_LOSS_LAYER_HPP_
