// Batch normalization on oneDNN (engine: DNNL). Only the normalization moves to
// oneDNN; Caffe's three statistics blobs are kept and updated by the reference
// BatchNormLayer code from the batch mean and variance oneDNN returns, so running
// statistics and snapshots behave exactly as with engine CAFFE. With use_global_stats
// (TEST) the layer is one multiply-add per element and runs the reference code.
// Backward in TRAIN runs oneDNN's backward on the saved normalized input (mean 0,
// variance 1) with 1/sqrt(var + eps) as its scale: the same gradient as Caffe's,
// and correct when the layer ran in place and the input itself is gone.
// oneDNN's batch norm for plain NCHW is a slow generic loop, so the data is reordered
// into the channel-blocked layout around it, in the thread's shared scratch buffers.
// The normalized input is kept in plain layout in x_norm_ (reordered back into the
// blocked layout for backward), where a Scale running in place after the layer reads
// it too (KeptTopValues) instead of saving a second copy.
#ifndef CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/util/dnnl_conv_common.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlBatchNormLayer : public BatchNormLayer {
 public:
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kPlainOnly;
  }
  explicit DnnlBatchNormLayer(const LayerParameter& param) : BatchNormLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  bool uses_dnnl() const { return supported_; }
  // oneDNN's backward is one primitive call: it has no place for a folded factor.
  bool AcceptChannelScaleFold(const Blob*, const Blob*) override { return false; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  void Build(const dnnl::memory::desc& layout);
  void ComputeInverseStd();

  bool supported_ = false;
  vector<int64_t> built_shape_;
  int built_threads_ = 0;
  bool built_global_ = false;

  dnnl::batch_normalization_forward fwd_;
  dnnl::batch_normalization_backward bwd_;
  // Each lives through one primitive call only, so they borrow the thread's shared
  // scratch buffers (peak memory of deep nets); x_hat_ carries x_norm_ into backward.
  DnnlScratchBridge src_, dst_, x_hat_, diff_dst_, diff_src_;
  dnnl::memory mean_mem_, variance_mem_;
  dnnl::memory zero_mean_, unit_variance_, scale_, diff_scale_;
  Blob zeros_, ones_;  // the normalized input's statistics, for backward
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_
