// ReLU on cuDNN (engine: CUDNN): cudnnActivation* with CUDNN_ACTIVATION_RELU. Leaky ReLU
// (negative_slope != 0) has no cuDNN mode here and runs the reference GPU path, as do
// blobs of more than 2^31 - 1 elements. Works in place.
#ifndef CAFFE_LAYERS_CUDNN_RELU_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_RELU_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/relu_layer.hpp"

namespace caffe {

namespace cudnn {
class Activation;
}  // namespace cudnn

class CudnnReLULayer : public ReLULayer {
 public:
  explicit CudnnReLULayer(const LayerParameter& param);
  ~CudnnReLULayer() override;
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

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_RELU_LAYER_HPP_
