// Squared Euclidean distance between two bottoms of equal size per example:
// loss = sum (a - b)^2 / (2 * num), num being the first dimension. Both bottoms can
// take a gradient (regression toward a target that is itself learned).
#ifndef CAFFE_LAYERS_EUCLIDEAN_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_EUCLIDEAN_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class EuclideanLossLayer : public LossLayer {
 public:
  explicit EuclideanLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "EuclideanLoss"; }
  bool AllowForceBackward(int bottom_index) const override { return true; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  Blob difference_;  // a - b, kept from Forward for Backward
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_EUCLIDEAN_LOSS_LAYER_HPP_
