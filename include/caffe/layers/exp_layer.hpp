// Exponential: y = base ^ (shift + scale * x), base -1 meaning e. The gradient is
// computed from y, so in-place computation costs nothing extra.
#ifndef CAFFE_LAYERS_EXP_LAYER_HPP_
#define CAFFE_LAYERS_EXP_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class ExpLayer : public NeuronLayer {
 public:
  explicit ExpLayer(const LayerParameter& param) : NeuronLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Exp"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  float inner_scale_ = 1;  // y = outer_scale_ * exp(inner_scale_ * x)
  float outer_scale_ = 1;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_EXP_LAYER_HPP_
