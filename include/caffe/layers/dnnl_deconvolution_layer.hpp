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
#include "caffe/layers/dnnl_conv_primitives.hpp"

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

  bool supported_ = false;
  // What the primitives were built for; a change rebuilds them.
  vector<int64_t> built_shape_;
  int built_threads_ = 0;
  DnnlConvPrimitives<DnnlDeconvolutionOps> primitives_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_DECONVOLUTION_LAYER_HPP_
