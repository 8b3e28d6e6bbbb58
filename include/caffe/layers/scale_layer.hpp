// Multiplies by a scale broadcast over the axes it does not cover, optionally adding
// a bias of the same shape: y = x * s + b. s's shape matches x's axes
// [axis, axis + s.num_axes); s is a learned blob shaped by `axis` and `num_axes`
// (-1: every remaining axis; filler default constant 1) or the second bottom. A
// 0-axis (scalar) scale applies to every element. The bias (bias_term) is always
// learned, filled by bias_filler (default constant 0). Works in place.
#ifndef CAFFE_LAYERS_SCALE_LAYER_HPP_
#define CAFFE_LAYERS_SCALE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class ScaleLayer : public Layer {
 public:
  explicit ScaleLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Scale"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  void set_bottom_producer(int bottom_index, const Layer* producer) override {
    if (bottom_index == 0) input_producer_ = producer;
  }
  // Whether the last Forward ran in place on values its producer keeps a copy of
  // (BatchNorm's normalized output, or on the device what it is computed from), so
  // that it saved no copy of its own.
  bool borrows_input() const {
    return borrowed_input_ != nullptr || borrowed_device_input_.values != nullptr;
  }
  // A learned per-channel scale (axis 1, one axis) folds into a producer that accepts
  // it; the fold applies in CPU passes where the producer kept its top (borrowed).
  bool FoldChannelScaleInto(Layer* producer) override;
  bool folds_into_producer() const { return fold_producer_ != nullptr; }
  ChannelLayoutRole channel_layout_role() const override;

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  Blob* scale_blob(const vector<Blob*>& bottom) const {
    return bottom.size() > 1 ? bottom[1] : blobs_[0].get();
  }

  bool bias_term_ = false;
  int bias_param_id_ = -1;  // index of the bias in blobs_, -1 without bias_term
  // x viewed as outer_ x dim_ x inner_, with the scale covering the middle part.
  int64_t outer_ = 1;
  int64_t dim_ = 1;
  int64_t inner_ = 1;
  int axis_ = 0;  // the first axis the scale covers
  Blob saved_input_;  // x, when running in place (the scale gradient needs it)
  const Layer* input_producer_ = nullptr;
  // x as the producer keeps it, when it does: then saved_input_ stays unallocated.
  const float* borrowed_input_ = nullptr;
  KeptDeviceTop borrowed_device_input_;  // the same from the producer's GPU Forward
  Layer* fold_producer_ = nullptr;  // see FoldChannelScaleInto
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SCALE_LAYER_HPP_
