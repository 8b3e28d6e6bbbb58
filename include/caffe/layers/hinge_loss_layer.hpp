// One-vs-all hinge loss for N x C scores and N integer labels:
//   loss = 1/N sum_n sum_k max(0, 1 - delta(k == label_n) * x[n, k])^p,
// delta = +1 for the labelled class and -1 otherwise, p = 1 (L1) or 2 (L2).
#ifndef CAFFE_LAYERS_HINGE_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_HINGE_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class HingeLossLayer : public LossLayer {
 public:
  explicit HingeLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "HingeLoss"; }

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

#endif  // CAFFE_LAYERS_HINGE_LOSS_LAYER_HPP_
