// Convolution on cuDNN (engine: CUDNN): the reference ConvolutionLayer with its GPU
// passes done by cuDNN, including groups, dilation and the bias. For every bottom shape
// the fastest algorithm of each pass (forward, backward data, backward filter) is
// measured once with cudnnFind*Algorithm and cached; only algorithms whose workspace
// fits convolution_param.cudnn_workspace_limit_mb, that are deterministic where one
// is (the CPU path is, and tests compare the two), and that use plain FP32 math (no
// TF32 tensor cores) are taken. The workspace is the thread's shared cuDNN workspace.
// (cudnnFind*Algorithm allocates what its own trials need while it measures; the limit
// bounds the workspace of the algorithms kept, which is what every later pass uses.)
// The CPU passes are the reference ones; geometries cuDNN is not given here (not 2-d,
// or sizes past int) run the reference GPU path.
#ifndef CAFFE_LAYERS_CUDNN_CONVOLUTION_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_CONVOLUTION_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/convolution_layer.hpp"

namespace caffe {

class CudnnConvolutionLayer : public ConvolutionLayer {
 public:
  explicit CudnnConvolutionLayer(const LayerParameter& param);
  ~CudnnConvolutionLayer() override;
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  // False for geometries left to the reference path.
  bool CudnnCanRun(const Blob& bottom, const Blob& top) const;
  // Describes the current shapes to cuDNN and finds (or recalls) the forward
  // algorithm; the backward ones when `backward` is set.
  void Prepare(const Blob& bottom, const Blob& top, bool backward);

  size_t workspace_limit_bytes_ = 0;
  struct State;  // cuDNN descriptors and the algorithm cache (cudnn_convolution_layer.cpp)
  std::unique_ptr<State> cudnn_;
};

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_CONVOLUTION_LAYER_HPP_
