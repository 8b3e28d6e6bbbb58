// Deconvolution on oneDNN (engine: DNNL). Same parameters, weights and shapes as the
// reference DeconvolutionLayer it extends; oneDNN's deconvolution primitives do the
// arithmetic. 2-d deconvolutions over N x C x H x W run on oneDNN, anything else
// (3-d, a channel axis other than 1) runs the reference code. Caffe's weights,
// in x out/group x kh x kw, are oneDNN's deconvolution weights in the "iohw" (grouped:
// "giohw") layout, so they are read where they lie or reordered to the primitive's
// preferred layout at the boundary, as the convolution layer does.
#ifndef CAFFE_LAYERS_DNNL_DECONVOLUTION_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_DECONVOLUTION_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/util/dnnl_context.hpp"
#include "caffe/util/dnnl_conv_common.hpp"

namespace caffe {

class DnnlDeconvolutionLayer : public DeconvolutionLayer {
 public:
  explicit DnnlDeconvolutionLayer(const LayerParameter& param) : DeconvolutionLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // False when the current geometry runs the reference code.
  bool uses_dnnl() const { return supported_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  bool Supported(const vector<Blob*>& bottom) const;
  void BuildForward();
  // Backward primitives are built on first use: test-only nets never need them.
  void BuildBackward();

  bool supported_ = false;
  bool backward_built_ = false;
  // What the primitives were built for; a change rebuilds them.
  vector<int64_t> built_shape_;
  int built_threads_ = 0;

  dnnl::memory::dims src_dims_, weights_dims_, bias_dims_, dst_dims_;
  dnnl::memory::dims strides_, dilates_, padding_l_, padding_r_;
  // Caffe's weight blob described in oneDNN's terms (iohw / giohw).
  dnnl::memory::desc blob_weights_md_;

  dnnl::deconvolution_forward::primitive_desc fwd_pd_;
  dnnl::deconvolution_forward fwd_;
  DnnlScratchBridge fwd_src_, fwd_weights_, fwd_dst_;
  dnnl::memory bias_;

  dnnl::deconvolution_backward_data bwd_data_;
  DnnlScratchBridge bwd_data_diff_dst_, bwd_data_weights_, bwd_data_diff_src_;
  dnnl::deconvolution_backward_weights bwd_weights_;
  DnnlScratchBridge bwd_weights_src_, bwd_weights_diff_dst_, bwd_weights_diff_weights_;
  // As in DnnlConvolutionLayer: one reorder of dy serves both backward primitives.
  bool bwd_data_reuses_diff_dst_ = false;
  dnnl::memory diff_bias_;
  // oneDNN overwrites weight gradients; Caffe accumulates them. oneDNN writes the
  // weight gradient into a shared scratch slot and the bias gradient here, and both
  // are added to the blobs' diffs.
  Blob bias_diff_scratch_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_DECONVOLUTION_LAYER_HPP_
