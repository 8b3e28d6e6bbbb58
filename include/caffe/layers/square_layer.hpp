// Square: y = x * x elementwise, the worked example of docs/writing_a_layer.md.
// Unlike the other neuron layers it refuses to run in place: its gradient 2 x dy needs
// x, and an in-place forward would have replaced x by x * x, which has lost x's sign.
#ifndef CAFFE_LAYERS_SQUARE_LAYER_HPP_
#define CAFFE_LAYERS_SQUARE_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class SquareLayer : public NeuronLayer {
 public:
  explicit SquareLayer(const LayerParameter& param) : NeuronLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Square"; }

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

#endif  // CAFFE_LAYERS_SQUARE_LAYER_HPP_
