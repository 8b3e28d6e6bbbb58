// Softmax on cuDNN (engine: CUDNN): cudnnSoftmax* in CUDNN_SOFTMAX_ACCURATE mode (the
// max is subtracted first, as in the reference) over the channel axis of the bottom
// seen as outer x channels x inner x 1. Sizes past int run the reference GPU path.
// Works in place.
#ifndef CAFFE_LAYERS_CUDNN_SOFTMAX_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_SOFTMAX_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/softmax_layer.hpp"

namespace caffe {

class CudnnSoftmaxLayer : public SoftmaxLayer {
 public:
  explicit CudnnSoftmaxLayer(const LayerParameter& param);
  ~CudnnSoftmaxLayer() override;
  // False when the current shape runs the reference path.
  bool uses_cudnn() const;

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  void Describe();

  struct State;  // cuDNN descriptor and scratch (cudnn_softmax_layer.cpp)
  std::unique_ptr<State> cudnn_;
};

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_SOFTMAX_LAYER_HPP_
