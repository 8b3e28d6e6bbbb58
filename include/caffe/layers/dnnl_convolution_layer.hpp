// Convolution on oneDNN (engine: DNNL). Same parameters, weights and shapes as the
// reference ConvolutionLayer it extends; only the arithmetic moves to oneDNN. 2-d
// convolutions over N x C x H x W run on oneDNN, anything else (3-d, a channel axis
// other than 1) runs the reference code. oneDNN picks its own activation and weight
// layouts; blobs stay plain NCHW and are reordered at the boundary when they differ.
#ifndef CAFFE_LAYERS_DNNL_CONVOLUTION_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_CONVOLUTION_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/dnnl_conv_primitives.hpp"

namespace caffe {

class DnnlConvolutionLayer : public ConvolutionLayer {
 public:
  explicit DnnlConvolutionLayer(const LayerParameter& param) : ConvolutionLayer(param) {}
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
  DnnlConvPrimitives<DnnlConvolutionOps> primitives_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_CONVOLUTION_LAYER_HPP_
