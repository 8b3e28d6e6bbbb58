// Power: y = (shift + scale * x) ^ power.
#ifndef CAFFE_LAYERS_POWER_LAYER_HPP_
#define CAFFE_LAYERS_POWER_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class PowerLayer : public NeuronLayer {
 public:
  explicit PowerLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "Power"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  Blob bottom_copy_;  // the input, kept when computing in place and the gradient needs it
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_POWER_LAYER_HPP_
