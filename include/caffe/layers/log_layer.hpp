// Logarithm: y = log_base(shift + scale * x), base -1 meaning e.
#ifndef CAFFE_LAYERS_LOG_LAYER_HPP_
#define CAFFE_LAYERS_LOG_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class LogLayer : public NeuronLayer {
 public:
  explicit LogLayer(const LayerParameter& param) : NeuronLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Log"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  float base_scale_ = 1;  // 1 / ln(base): converts the natural log to base `base`
  Blob bottom_copy_;      // the input, kept when computing in place
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_LOG_LAYER_HPP_
