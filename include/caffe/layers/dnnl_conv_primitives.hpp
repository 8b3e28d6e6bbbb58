// The oneDNN side of a convolution or deconvolution layer: the three primitives
// (forward, data gradient, weight gradient) built for one geometry, and the bridges
// between Caffe's plain NCHW blobs and the layouts the primitives picked. The two
// layers differ only in the primitive family (the Ops argument) and in how Caffe's
// weight blob reads in oneDNN's terms (DnnlConvShape::blob_weights). Only built with
// USE_DNNL.
#ifndef CAFFE_LAYERS_DNNL_CONV_PRIMITIVES_HPP_
#define CAFFE_LAYERS_DNNL_CONV_PRIMITIVES_HPP_

#ifdef USE_DNNL

#include <dnnl.hpp>

#include "caffe/blob.hpp"
#include "caffe/util/dnnl_conv_common.hpp"

namespace caffe {

// Each family also says how Caffe's weight blob reads in oneDNN's terms, so that the
// weights are used where they lie or reordered once at the boundary.
struct DnnlConvolutionOps {
  using Forward = dnnl::convolution_forward;
  using BackwardData = dnnl::convolution_backward_data;
  using BackwardWeights = dnnl::convolution_backward_weights;
  static constexpr dnnl::algorithm kAlgorithm = dnnl::algorithm::convolution_direct;
  // Caffe's weights, out x in/group x kh x kw.
  static constexpr dnnl::memory::format_tag kBlobWeightsTag = dnnl::memory::format_tag::oihw;
  static constexpr dnnl::memory::format_tag kGroupedBlobWeightsTag =
      dnnl::memory::format_tag::goihw;
};

struct DnnlDeconvolutionOps {
  using Forward = dnnl::deconvolution_forward;
  using BackwardData = dnnl::deconvolution_backward_data;
  using BackwardWeights = dnnl::deconvolution_backward_weights;
  static constexpr dnnl::algorithm kAlgorithm = dnnl::algorithm::deconvolution_direct;
  // Caffe's weights, in x out/group x kh x kw.
  static constexpr dnnl::memory::format_tag kBlobWeightsTag = dnnl::memory::format_tag::iohw;
  static constexpr dnnl::memory::format_tag kGroupedBlobWeightsTag =
      dnnl::memory::format_tag::giohw;
};

// One layer's geometry in oneDNN's terms.
struct DnnlConvShape {
  dnnl::memory::dims src, weights, bias, dst;  // weights: grouped ones lead with G
  DnnlConvGeometry geometry;
  dnnl::memory::desc blob_weights;  // how Caffe's weight blob is laid out
  bool bias_term = false;
  // Blob::channel_block of the bottom (src) and the top (dst): 0 for plain NCHW.
  int src_block = 0, dst_block = 0;
};

// The shape of a 2-d layer over an N x C x H x W bottom: src has `channels`, dst
// `num_output` channels, and the weight blob's first two axes (after the group, when
// group > 1) are laid out as `weights_tag` / `grouped_weights_tag` say (oihw / goihw
// for convolution, iohw / giohw for deconvolution).
DnnlConvShape MakeDnnlConvShape(const vector<int64_t>& bottom_shape, int channels, int num_output,
                                int group, const vector<int>& kernel_shape,
                                const vector<int>& output_shape, const vector<int>& stride,
                                const vector<int>& dilation, const vector<int>& pad,
                                bool bias_term, dnnl::memory::format_tag weights_tag,
                                dnnl::memory::format_tag grouped_weights_tag);

template <class Ops>
class DnnlConvPrimitives {
 public:
  // Builds the forward primitive for `shape`; the backward ones are built on first
  // use, since test-only nets never need them. Throws dnnl::error when oneDNN
  // refuses the geometry.
  void Build(const DnnlConvShape& shape);
  // The channel block the forward primitive computes the bottom (or the top) in: a
  // blob in that layout needs no reorder. 0 when it is not a supported blocked layout.
  int PreferredChannelBlock(bool top) const;
  // top[i] = the layer applied to bottom[i]; `bias` is null without a bias term.
  void Forward(const vector<Blob*>& bottom, const vector<Blob*>& top, const Blob& weights,
               const Blob* bias);
  // Adds the weight (and bias) gradients into the blobs' diffs where asked, and
  // writes bottom[i]'s diff where propagate_down[i].
  void Backward(const vector<Blob*>& top, const vector<bool>& propagate_down,
                const vector<Blob*>& bottom, Blob* weights, bool weight_grad, Blob* bias,
                bool bias_grad);

 private:
  void BuildBackward();

  DnnlConvShape shape_;
  bool backward_built_ = false;

  typename Ops::Forward::primitive_desc fwd_pd_;
  typename Ops::Forward fwd_;
  DnnlScratchBridge fwd_src_, fwd_weights_, fwd_dst_;
  dnnl::memory bias_;

  typename Ops::BackwardData bwd_data_;
  DnnlScratchBridge bwd_data_diff_dst_, bwd_data_weights_, bwd_data_diff_src_;
  typename Ops::BackwardWeights bwd_weights_;
  DnnlScratchBridge bwd_weights_src_, bwd_weights_diff_dst_, bwd_weights_diff_weights_;
  // Both backward primitives want the output gradient in the same layout, so the
  // one reorder made for the weight gradient also serves the input gradient.
  bool bwd_data_reuses_diff_dst_ = false;
  dnnl::memory diff_bias_;
  // oneDNN overwrites weight gradients; Caffe accumulates them. oneDNN writes the
  // weight gradient into a shared scratch slot and the bias gradient here, and both
  // are added to the blobs' diffs.
  Blob bias_diff_scratch_;
};

extern template class DnnlConvPrimitives<DnnlConvolutionOps>;
extern template class DnnlConvPrimitives<DnnlDeconvolutionOps>;

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_CONV_PRIMITIVES_HPP_
