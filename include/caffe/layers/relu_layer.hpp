// Rectified linear unit, leaky when negative_slope != 0: y = x > 0 ? x : slope * x.
#ifndef CAFFE_LAYERS_RELU_LAYER_HPP_
#define CAFFE_LAYERS_RELU_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class ReLULayer : public NeuronLayer {
 public:
  explicit ReLULayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "ReLU"; }
  // Elementwise: any layout its bottoms and tops share.
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kFollowsItsBlobs;
  }

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

#endif  // CAFFE_LAYERS_RELU_LAYER_HPP_
