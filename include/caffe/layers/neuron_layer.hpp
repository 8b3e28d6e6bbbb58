// Base of elementwise layers: one bottom, one top of the same shape; in-place
// computation (top == bottom) is allowed.
#ifndef CAFFE_LAYERS_NEURON_LAYER_HPP_
#define CAFFE_LAYERS_NEURON_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class NeuronLayer : public Layer {
 public:
  explicit NeuronLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
  }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_NEURON_LAYER_HPP_
