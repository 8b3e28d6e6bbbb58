// Negative log likelihood of the labelled class, given probabilities:
// loss = -1/N sum_n log(max(p[n, label_n], 1e-20)). bottom[0] is N x C x ... (already
// a distribution, e.g. a Softmax output), bottom[1] holds N integer labels.
#ifndef CAFFE_LAYERS_MULTINOMIAL_LOGISTIC_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_MULTINOMIAL_LOGISTIC_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class MultinomialLogisticLossLayer : public LossLayer {
 public:
  explicit MultinomialLogisticLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "MultinomialLogisticLoss"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // Label of example n, checked to lie in [0, dim_).
  int64_t LabelAt(const float* labels, int64_t n) const;

  int64_t num_ = 0;  // examples
  int64_t dim_ = 0;  // classes per example
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_MULTINOMIAL_LOGISTIC_LOSS_LAYER_HPP_
