// Parametric ReLU: y = x > 0 ? x : a * x, where the slope a is learned, one per
// channel (axis 1) or one shared by all channels (channel_shared).
#ifndef CAFFE_LAYERS_PRELU_LAYER_HPP_
#define CAFFE_LAYERS_PRELU_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class PReLULayer : public NeuronLayer {
 public:
  explicit PReLULayer(const LayerParameter& param) : NeuronLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "PReLU"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  bool channel_shared_ = false;
  // In-place computation overwrites the input, which the gradients still need.
  Blob bottom_copy_;
#ifdef USE_CUDA
  // Per-block partial sums of the slope gradient on the GPU path (see prelu_layer.cu).
  Blob slope_diff_partials_;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_PRELU_LAYER_HPP_
