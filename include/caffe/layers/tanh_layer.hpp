// Hyperbolic tangent, y = tanh(x); works in place.
#ifndef CAFFE_LAYERS_TANH_LAYER_HPP_
#define CAFFE_LAYERS_TANH_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class TanHLayer : public NeuronLayer {
 public:
  explicit TanHLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "TanH"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_TANH_LAYER_HPP_
