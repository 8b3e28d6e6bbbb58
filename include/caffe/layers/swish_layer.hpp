// Swish: y = x * sigmoid(beta * x), BVLC's `Swish` (swish_param beta, default 1).
// dy/dx = s + beta * y * (1 - s) with s = sigmoid(beta * x), which the forward keeps,
// so the layer works in place.
#ifndef CAFFE_LAYERS_SWISH_LAYER_HPP_
#define CAFFE_LAYERS_SWISH_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class SwishLayer : public NeuronLayer {
 public:
  explicit SwishLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "Swish"; }
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  Blob sigmoid_;  // s = sigmoid(beta * x) of the last forward
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SWISH_LAYER_HPP_
