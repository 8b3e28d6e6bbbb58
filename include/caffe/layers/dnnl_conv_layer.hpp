// Convolution and deconvolution on oneDNN (engine: DNNL). Same parameters, weights
// and shapes as the reference layer each extends (Base); only the arithmetic moves to
// oneDNN's primitives of the Ops family. 2-d layers over N x C x H x W run on oneDNN,
// anything else (3-d, a channel axis other than 1) runs the reference code. oneDNN
// picks its own activation and weight layouts; blobs are reordered at the boundary
// when their layout (plain NCHW, or the channel-blocked one a net's layout plan gave
// them, Blob::channel_block) differs.
#ifndef CAFFE_LAYERS_DNNL_CONV_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_CONV_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/dnnl_conv_primitives.hpp"

namespace caffe {

template <class Base, class Ops>
class DnnlConvLayer : public Base {
 public:
  explicit DnnlConvLayer(const LayerParameter& param) : Base(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // False when the current geometry runs the reference code.
  bool uses_dnnl() const { return supported_; }
  // One bottom on oneDNN: each blob in its own layout. The reference code and several
  // bottoms (one set of reorder bridges for all) read and write plain blobs only.
  Layer::ChannelLayoutRole channel_layout_role() const override {
    return supported_ && this->layer_param_.bottom_size() == 1
               ? Layer::ChannelLayoutRole::kConvertsPerBlob
               : Layer::ChannelLayoutRole::kPlainOnly;
  }
  int PreferredChannelBlock(bool top, int index) const override {
    return supported_ ? primitives_.PreferredChannelBlock(top) : 0;
  }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  bool supported_ = false;
  // What the primitives were built for; a change rebuilds them.
  vector<int64_t> built_shape_;
  int built_threads_ = 0;
  int built_src_block_ = 0, built_dst_block_ = 0;
  DnnlConvPrimitives<Ops> primitives_;
};

using DnnlConvolutionLayer = DnnlConvLayer<ConvolutionLayer, DnnlConvolutionOps>;
using DnnlDeconvolutionLayer = DnnlConvLayer<DeconvolutionLayer, DnnlDeconvolutionOps>;

extern template class DnnlConvLayer<ConvolutionLayer, DnnlConvolutionOps>;
extern template class DnnlConvLayer<DeconvolutionLayer, DnnlDeconvolutionOps>;

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_CONV_LAYER_HPP_
