// Base of elementwise layers: one bottom, one top of the same shape; in-place
// computation (top == bottom) is allowed.
#ifndef CAFFE_LAYERS_NEURON_LAYER_HPP_
#define CAFFE_LAYERS_NEURON_LAYER_HPP_

#include "caffe/layer.hpp"
#ifdef USE_CUDA
#include "caffe/util/math_functions.hpp"
#endif

namespace caffe {

class NeuronLayer : public Layer {
 public:
  explicit NeuronLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
  }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

#ifdef USE_CUDA
 protected:
  // Layers whose gradient needs the input keep a copy of it when running in place.
  // Blob::CopyFrom goes through the host; on the GPU path the copy stays on the device.
  static void CopyDataOnGpu(const Blob& source, Blob* copy) {
    copy->ReshapeLike(source);
    if (source.count() > 0) {
      math::gpu_copy(source.count(), source.gpu_data(), copy->mutable_gpu_data());
    }
  }
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_NEURON_LAYER_HPP_
