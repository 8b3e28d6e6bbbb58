// Collapses axes [axis, end_axis] into one (default: everything after the first
// axis), e.g. N x C x H x W -> N x CHW. A view: the top shares the bottom's data
// and diff, so nothing is copied either way.
#ifndef CAFFE_LAYERS_FLATTEN_LAYER_HPP_
#define CAFFE_LAYERS_FLATTEN_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Flatten"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
  // The same views in GPU mode: nothing runs, so nothing is copied to the host (the
  // base class would call the empty CPU pass and log that the layer lacks a GPU path).
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_FLATTEN_LAYER_HPP_
