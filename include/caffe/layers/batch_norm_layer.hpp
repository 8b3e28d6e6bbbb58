// Batch normalization without the affine part (follow it with a Scale layer with
// bias_term, as in Caffe): y = (x - mean_c) / sqrt(var_c + eps) per channel (axis 1),
// statistics over the batch and all spatial positions.
//
// The three blobs are Caffe's: running sum of means (C), running sum of variances (C)
// and the moving-average normalizer (1); the running estimates are blob / normalizer.
// In TRAIN with batch statistics, every forward folds the batch into them:
//   f = f * maf + 1;  mean = mean * maf + batch_mean;  var = var * maf + unbiased var.
// With use_global_stats (default: TEST phase) the running estimates are used instead.
// The blobs are statistics, not weights: no gradient is computed for them and the
// layer marks them lr_mult 0 itself, so prototxts need no `param { lr_mult: 0 }`.
#ifndef CAFFE_LAYERS_BATCH_NORM_LAYER_HPP_
#define CAFFE_LAYERS_BATCH_NORM_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class BatchNormLayer : public Layer {
 public:
  explicit BatchNormLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "BatchNorm"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  // The running mean and variance sums; the normalizer (blob 2) counts forward
  // passes, which every rank makes alike.
  bool ParamIsDataStatistic(int param_id) const override { return param_id < 2; }
  const float* KeptTopValues() const override {
    return x_norm_kept_ ? x_norm_.cpu_data() : nullptr;
  }
#ifdef USE_CUDA
  KeptDeviceTop KeptTopValuesGpu() const override;
#endif
  // A Scale in place on this layer's top folds into it (Layer::FoldChannelScaleInto):
  // a training forward then writes x_hat to x_norm_ and x_hat * s + b to the top, and
  // backward takes the Scale's factors.
  bool AcceptChannelScaleFold(const Blob* scale, const Blob* bias) override;
  // Both layouts, in the CPU passes of this class (not its engine variants).
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kFollowsItsBlobs;
  }
  void ReceiveChannelScaleFold(const float* scale, std::vector<double> sums) override;

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // Batch mean and (biased) variance per channel into mean_ and variance_.
  // x in the layout of the given channel block (0: plain).
  void ComputeBatchStatistics(const float* x, int block);
  // Folds mean_ and variance_ into the running blobs.
  void UpdateRunningStatistics();

  bool use_global_stats_ = false;
  float moving_average_fraction_ = 0.999f;
  float eps_ = 1e-5f;
  int64_t channels_ = 0;
  int64_t num_ = 0;      // axis 0
  int64_t spatial_ = 1;  // product of the axes after it
  Blob mean_;      // statistics used by the last forward (C)
  Blob variance_;  // (C)
  Blob inv_std_;   // 1 / sqrt(variance + eps) (C)
  Blob x_norm_;    // normalized input, kept because in-place layers may overwrite top
  bool x_norm_kept_ = false;  // whether the last CPU Forward wrote x_norm_ (= top[0])
  bool x_norm_kept_on_device_ = false;  // the same for the last GPU Forward
  std::vector<double> plane_stats_;  // ComputeBatchStatistics' per-plane sums (N x C x 2)
  // A folded consumer (AcceptChannelScaleFold) and what its last Backward handed over:
  // the factor per channel and the sums of dy and dy * x_hat, empty once used.
  const Blob* fold_scale_blob_ = nullptr;  // the folded consumer's factors (C)
  const Blob* fold_bias_blob_ = nullptr;   // and bias (C), or nullptr
  std::vector<float> fold_scale_;
  std::vector<double> fold_sums_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_BATCH_NORM_LAYER_HPP_
