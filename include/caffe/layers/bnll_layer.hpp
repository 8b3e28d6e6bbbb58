// Binomial normal log likelihood (softplus): y = log(1 + exp(x)), evaluated without
// overflow for large |x|. The gradient sigmoid(x) = 1 - exp(-y) comes from y, so
// in-place computation needs no copy.
#ifndef CAFFE_LAYERS_BNLL_LAYER_HPP_
#define CAFFE_LAYERS_BNLL_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class BNLLLayer : public NeuronLayer {
 public:
  explicit BNLLLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "BNLL"; }

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

#endif  // CAFFE_LAYERS_BNLL_LAYER_HPP_
