// Batch normalization on oneDNN (engine: DNNL). Only the normalization moves to
// oneDNN; Caffe's three statistics blobs are kept and updated by the reference
// BatchNormLayer code from the batch mean and variance oneDNN returns, so running
// statistics and snapshots behave exactly as with engine CAFFE. With use_global_stats
// (TEST) the layer is one multiply-add per element and runs the reference code.
// Backward in TRAIN runs oneDNN's backward on the saved normalized input (mean 0,
// variance 1) with 1/sqrt(var + eps) as its scale: the same gradient as Caffe's,
// and correct when the layer ran in place and the input itself is gone.
// oneDNN's batch norm for plain NCHW is a slow generic loop, so the data is reordered
// into the channel-blocked layout around it; the normalized input is then kept in
// that layout for backward instead of in x_norm_.
#ifndef CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/util/dnnl_conv_common.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlBatchNormLayer : public BatchNormLayer {
 public:
  explicit DnnlBatchNormLayer(const LayerParameter& param) : BatchNormLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  bool uses_dnnl() const { return supported_; }

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
  // dst_ keeps x_hat for backward; the others live through one primitive call only,
  // so they borrow the thread's shared scratch buffers (peak memory of deep nets).
  DnnlLayoutBridge dst_;
  DnnlScratchBridge src_, diff_dst_, diff_src_;
  dnnl::memory mean_mem_, variance_mem_;
  // x_hat in x_norm_, used when no reorder happens (dst_ has then no buffer of its own).
  dnnl::memory plain_x_hat_;
  dnnl::memory zero_mean_, unit_variance_, scale_, diff_scale_;
  Blob zeros_, ones_;  // the normalized input's statistics, for backward
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_BATCH_NORM_LAYER_HPP_
