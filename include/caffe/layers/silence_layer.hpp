// Consumes blobs that nothing else uses, so the net does not report them as
// outputs. It produces nothing and passes back zero gradients.
#ifndef CAFFE_LAYERS_SILENCE_LAYER_HPP_
#define CAFFE_LAYERS_SILENCE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class SilenceLayer : public Layer {
 public:
  explicit SilenceLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  const char* type() const override { return "Silence"; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 0; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SILENCE_LAYER_HPP_
