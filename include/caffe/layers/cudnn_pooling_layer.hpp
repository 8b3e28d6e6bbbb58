// Pooling on cuDNN (engine: CUDNN) for MAX and AVE with one top. cuDNN pads both
// sides equally and rounds output sizes down, so it runs only where Caffe's output
// size equals that floor size: then every window lies inside the padded image, and
// Caffe's AVE divisor (the window clipped to the padded image, padding counting as
// zeros) is the full kernel area, which is cuDNN's
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING. Where Caffe's CEIL rounding adds a last
// window that reaches past the padding (its AVE divisor is clipped there, and cuDNN has
// no such window), as well as for STOCHASTIC, the MAX mask top and sizes past int, the
// reference GPU path runs instead. MAX uses cuDNN's deterministic max, padding never
// wins (as in Caffe); its backward reads a copy of the forward output, which a later
// in-place layer cannot change (Caffe keeps argmax indices for the same reason).
#ifndef CAFFE_LAYERS_CUDNN_POOLING_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_POOLING_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/pooling_layer.hpp"

namespace caffe {

class CudnnPoolingLayer : public PoolingLayer {
 public:
  explicit CudnnPoolingLayer(const LayerParameter& param);
  ~CudnnPoolingLayer() override;
  // False when the current geometry (after Reshape) runs the reference path.
  bool uses_cudnn(const vector<Blob*>& top) const;

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  void Describe(const Blob& bottom);

  struct State;  // cuDNN descriptors (cudnn_pooling_layer.cpp)
  std::unique_ptr<State> cudnn_;
};

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_POOLING_LAYER_HPP_
