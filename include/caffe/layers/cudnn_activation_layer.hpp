// ReLU, Sigmoid and TanH on cuDNN (engine: CUDNN): one class template over the
// reference layer, since the three differ only in the cudnnActivation* mode. Each
// keeps its reference class's CPU path, and runs the reference GPU path where cuDNN
// has no matching mode (leaky ReLU, negative_slope != 0) or the blob has more than
// 2^31 - 1 elements. Works in place.
#ifndef CAFFE_LAYERS_CUDNN_ACTIVATION_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_ACTIVATION_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/relu_layer.hpp"
#include "caffe/layers/sigmoid_layer.hpp"
#include "caffe/layers/tanh_layer.hpp"

namespace caffe {

namespace cudnn {
class Activation;
}  // namespace cudnn

template <typename Reference>
class CudnnActivationLayer : public Reference {
 public:
  explicit CudnnActivationLayer(const LayerParameter& param);
  ~CudnnActivationLayer() override;
  // False when the parameters or the current shape run the reference path.
  bool uses_cudnn(const Blob& bottom) const;

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  std::unique_ptr<cudnn::Activation> activation_;
};

using CudnnReLULayer = CudnnActivationLayer<ReLULayer>;
using CudnnSigmoidLayer = CudnnActivationLayer<SigmoidLayer>;
using CudnnTanHLayer = CudnnActivationLayer<TanHLayer>;

extern template class CudnnActivationLayer<ReLULayer>;
extern template class CudnnActivationLayer<SigmoidLayer>;
extern template class CudnnActivationLayer<TanHLayer>;

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_ACTIVATION_LAYER_HPP_
