// Clip: y = min(max(x, min), max), BVLC's `Clip` (clip_param min and max, both
// required). The gradient passes where min <= x <= max and is 0 elsewhere.
#ifndef CAFFE_LAYERS_CLIP_LAYER_HPP_
#define CAFFE_LAYERS_CLIP_LAYER_HPP_

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class ClipLayer : public NeuronLayer {
 public:
  explicit ClipLayer(const LayerParameter& param) : NeuronLayer(param) {}
  const char* type() const override { return "Clip"; }
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // The input, kept only in place: y = min or max cannot tell an x at the bound (whose
  // gradient passes) from one beyond it (whose gradient does not).
  Blob bottom_copy_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_CLIP_LAYER_HPP_
