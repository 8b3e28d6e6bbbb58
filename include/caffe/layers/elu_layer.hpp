// Exponential linear unit: y = x > 0 ? x : alpha * (exp(x) - 1).
#ifndef CAFFE_LAYERS_ELU_LAYER_HPP_
#define CAFFE_LAYERS_ELU_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class ELULayer : public NeuronLayer {
 public:
  explicit ELULayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "ELU"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // Kept only in place with alpha < 0, where the sign of y no longer tells that of x.
  Blob bottom_copy_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_ELU_LAYER_HPP_
