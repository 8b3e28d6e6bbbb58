// Local response normalization: y = x * scale^-beta, where scale = k + alpha/n * (sum
// of x^2 over a window of local_size neighbours). ACROSS_CHANNELS sums over nearby
// channels (n = local_size); WITHIN_CHANNEL sums over a local_size x local_size
// spatial square (n = local_size^2). Windows are clipped at the borders but always
// divided by the full n, as in Caffe.
//
// WITHIN_CHANNEL follows BVLC Caffe exactly, which builds it from pooling and power
// layers with a shift of 1: `k` does not apply there (it equals 1 by default anyway).
#ifndef CAFFE_LAYERS_LRN_LAYER_HPP_
#define CAFFE_LAYERS_LRN_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class LRNLayer : public Layer {
 public:
  explicit LRNLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "LRN"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // out = sum of `in` over the clipped window around every position, along the
  // axes this region normalizes over; `in` and `out` are shaped like the bottom.
  void WindowSum(const float* in, float* out);

  bool across_channels_ = true;
  int size_ = 5;
  int half_ = 2;  // window reaches half_ positions each side
  float alpha_ = 1.f;
  float beta_ = 0.75f;
  float k_ = 1.f;
  float window_count_ = 5.f;  // n in alpha / n
  int64_t num_ = 0, channels_ = 0, height_ = 0, width_ = 0;
  Blob scale_;    // k + alpha/n * window sum of squares, kept for backward
  Blob scratch_;  // squares in forward, dy*y/scale in backward
  Blob partial_;  // row sums in the separable within-channel window sum
#ifdef USE_CUDA
  // On the device every plane's row sums are formed at once: shaped like the bottom.
  Blob gpu_partial_;
  void WindowSumGpu(const float* in, float* out);
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_LRN_LAYER_HPP_
