// Absolute value: y = |x|. Unlike BVLC Caffe it may run in place; it then keeps
// a copy of the input, whose sign the gradient needs.
#ifndef CAFFE_LAYERS_ABSVAL_LAYER_HPP_
#define CAFFE_LAYERS_ABSVAL_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class AbsValLayer : public NeuronLayer {
 public:
  explicit AbsValLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "AbsVal"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  Blob bottom_copy_;  // the input, kept when computing in place
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_ABSVAL_LAYER_HPP_
