// Tops of fixed shapes filled by fillers: constant tops are written once at setup,
// random ones are redrawn on every Forward from the context's generator (on the
// device in GPU mode, for the uniform and plain Gaussian fillers).
#ifndef CAFFE_LAYERS_DUMMY_DATA_LAYER_HPP_
#define CAFFE_LAYERS_DUMMY_DATA_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class DummyDataLayer : public Layer {
 public:
  explicit DummyDataLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // Shapes are fixed by the parameter; they are set once in LayerSetUp.
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  const char* type() const override { return "DummyData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
#ifdef USE_CUDA
  // Uniform and Gaussian tops are drawn on the device: a host draw and upload of an
  // ImageNet-sized batch would take longer than the training step it feeds.
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
#endif

  vector<FillerParameter> fillers_;  // one per top
  vector<bool> refill_;              // per top: redraw on every Forward
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_DUMMY_DATA_LAYER_HPP_
