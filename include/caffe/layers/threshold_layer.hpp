// Step function: y = x > threshold ? 1 : 0. Its derivative is zero wherever it
// exists, so Backward writes zeros rather than refusing (BVLC Caffe aborts).
#ifndef CAFFE_LAYERS_THRESHOLD_LAYER_HPP_
#define CAFFE_LAYERS_THRESHOLD_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class ThresholdLayer : public NeuronLayer {
 public:
  explicit ThresholdLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "Threshold"; }

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

#endif  // CAFFE_LAYERS_THRESHOLD_LAYER_HPP_
