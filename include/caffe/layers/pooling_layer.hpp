// Spatial pooling (type "Pooling") over N x C x H x W: MAX (optional second top with
// the argmax index h * W + w of each output, as floats), AVE, and STOCHASTIC (TRAIN
// samples one input with probability proportional to its activation; TEST takes the
// activation-weighted average). Output sizes follow Caffe exactly, including CEIL
// rounding by default and its rule that a padded last window must start inside the
// image, so BVLC prototxt files give the same shapes.
#ifndef CAFFE_LAYERS_POOLING_LAYER_HPP_
#define CAFFE_LAYERS_POOLING_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class PoolingLayer : public Layer {
 public:
  explicit PoolingLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Pooling"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  // Only MAX pooling has a second top, the argmax mask.
  int MaxTopBlobs() const override {
    return layer_param_.pooling_param().pool() == PoolingParameter::MAX ? 2 : 1;
  }

  int pooled_height() const { return pooled_height_; }
  int pooled_width() const { return pooled_width_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  // The input rectangle [h0, h1) x [w0, w1) one output reads, clipped to the image.
  struct Window {
    int h0, h1, w0, w1;
    bool empty() const { return h0 >= h1 || w0 >= w1; }
  };
  Window WindowAt(int ph, int pw) const;
  // AVE divides by the window clipped to the padded image, not to the image: padding
  // counts as zeros, as in Caffe.
  int AveragePoolSize(int ph, int pw) const;
  int PooledSize(int64_t input, int kernel, int pad, int stride, bool any_pad) const;

  void ForwardMax(const float* x, float* y, float* mask_top);
  void ForwardAve(const float* x, float* y);
  void ForwardStochasticTrain(const float* x, float* y);
  void ForwardStochasticTest(const float* x, float* y);
  void BackwardMax(const float* dy, const float* mask_top, float* dx);
  void BackwardAve(const float* dy, float* dx);
  void BackwardStochasticTrain(const float* dy, float* dx);
  void BackwardStochasticTest(const float* dy, const float* x, float* dx);

 protected:
  // The geometry, also read by engine variants (cuDNN) to describe the same pooling.
  PoolingParameter::PoolMethod method_ = PoolingParameter::MAX;
  bool global_pooling_ = false;
  bool ceil_mode_ = true;
  int kernel_h_ = 0, kernel_w_ = 0;
  int stride_h_ = 1, stride_w_ = 1;
  int pad_h_ = 0, pad_w_ = 0;
  int planes_ = 0;  // num * channels: every plane is pooled independently
  int height_ = 0, width_ = 0;
  int pooled_height_ = 0, pooled_width_ = 0;

 private:
  // Bottom index (h * W + w within its plane) each output came from: MAX without a
  // mask top, and STOCHASTIC in TRAIN. -1 for an empty window.
  vector<int> source_index_;
#ifdef USE_CUDA
  // source_index_ on the device (ints), for MAX without a mask top in GPU mode;
  // recreated when the top's size changes.
  std::unique_ptr<SyncedMemory> gpu_source_index_;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_POOLING_LAYER_HPP_
