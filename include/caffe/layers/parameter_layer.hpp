// Parameter: a learnable blob as the layer's one top, BVLC's `Parameter`
// (parameter_param shape). The top shares the blob's values and gradient, so a layer
// that reads it trains the blob like any weight; the blob starts at zero unless the
// weights file sets it.
#ifndef CAFFE_LAYERS_PARAMETER_LAYER_HPP_
#define CAFFE_LAYERS_PARAMETER_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class ParameterLayer : public Layer {
 public:
  explicit ParameterLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Parameter"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // The top's gradient is the blob's own (shared): nothing to compute.
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
#ifdef USE_CUDA
  // Sharing is the same in either mode: no device work.
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {
    Forward_cpu(bottom, top);
  }
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_PARAMETER_LAYER_HPP_
