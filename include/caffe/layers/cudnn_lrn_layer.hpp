// Local response normalization on cuDNN (engine: CUDNN) for ACROSS_CHANNELS, with
// cudnnLRNCrossChannel*: the same y = x * (k + alpha/n * window sum of x^2)^-beta (cuDNN
// divides alpha by the window width itself). WITHIN_CHANNEL, and parameters outside
// cuDNN's range (local_size 1..16, k >= 1e-5, beta >= 0.01) or sizes past int, run the
// reference GPU path.
#ifndef CAFFE_LAYERS_CUDNN_LRN_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_LRN_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/lrn_layer.hpp"

namespace caffe {

class CudnnLRNLayer : public LRNLayer {
 public:
  explicit CudnnLRNLayer(const LayerParameter& param);
  ~CudnnLRNLayer() override;
  // False when these parameters or the current shape run the reference path.
  bool uses_cudnn() const;

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  void Describe(const Blob& bottom);

  struct State;  // cuDNN descriptors (cudnn_lrn_layer.cpp)
  std::unique_ptr<State> cudnn_;
};

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_LRN_LAYER_HPP_
