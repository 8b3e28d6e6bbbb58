// Batch normalization on cuDNN (engine: CUDNN), mapped exactly onto Caffe's BatchNorm
// (no affine part; running statistics kept as unnormalised sums with a normalizer):
//  - cuDNN's scale and bias are fixed buffers of ones and zeros, so its affine step is
//    the identity.
//  - In TRAIN, cudnnBatchNormalizationForwardTraining runs with an averaging factor of
//    1: its "running" outputs are then exactly this batch's mean and unbiased variance
//    (cuDNN applies m / (m - 1) to the running variance, as Caffe does), which are folded
//    into Caffe's blobs with Caffe's own update, f = f * maf + 1, mean = mean * maf +
//    batch mean, var = var * maf + unbiased batch var. Backward is
//    cudnnBatchNormalizationBackward with the saved batch mean and inverse deviation.
//  - With use_global_stats, cudnnBatchNormalizationForwardInference gets the running
//    estimates blob / normalizer (zeros while the normalizer is 0, as in Caffe), and
//    backward, dx = dy / sqrt(var + eps), is the same inference call applied to dy with
//    a zero mean.
// A batch of one value per channel in TRAIN (Caffe then skips the m / (m - 1)
// correction, cuDNN would divide by zero) and sizes past int run the reference GPU path.
// In place, the input is copied first, because cuDNN's backward needs it; an in-place
// Scale after the layer reads x_hat from that copy and the saved statistics
// (KeptTopValuesGpu) instead of keeping a copy of its own.
#ifndef CAFFE_LAYERS_CUDNN_BATCH_NORM_LAYER_HPP_
#define CAFFE_LAYERS_CUDNN_BATCH_NORM_LAYER_HPP_

#ifdef USE_CUDNN

#include <memory>

#include "caffe/layers/batch_norm_layer.hpp"

namespace caffe {

class CudnnBatchNormLayer : public BatchNormLayer {
 public:
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kPlainOnly;
  }
  explicit CudnnBatchNormLayer(const LayerParameter& param);
  ~CudnnBatchNormLayer() override;
  // False when the parameters or the current shape run the reference path.
  bool uses_cudnn() const;
#ifdef USE_CUDA
  // After a training Forward in place through cuDNN: the input copy and the batch
  // statistics, from which an in-place Scale recomputes x_hat (see Layer).
  KeptDeviceTop KeptTopValuesGpu() const override;
#endif

 protected:
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  void Describe(const Blob& bottom);

  struct State;  // cuDNN descriptors and device buffers (cudnn_batch_norm_layer.cpp)
  std::unique_ptr<State> cudnn_;
};

}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_LAYERS_CUDNN_BATCH_NORM_LAYER_HPP_
