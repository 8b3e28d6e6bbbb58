// Inner product on oneDNN (engine: DNNL). Same weights (N x K, or K x N with
// `transpose`) and shapes as the reference InnerProductLayer; the bottom is viewed as
// M x K. All tensors stay in their plain layouts (the transposed weights are
// oneDNN's "ba" layout), so nothing is reordered.
#ifndef CAFFE_LAYERS_DNNL_INNER_PRODUCT_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_INNER_PRODUCT_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlInnerProductLayer : public InnerProductLayer {
 public:
  explicit DnnlInnerProductLayer(const LayerParameter& param) : InnerProductLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  bool uses_dnnl() const { return supported_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  void Build();

  bool supported_ = false;
  int built_rows_ = -1;
  int built_threads_ = 0;

  dnnl::inner_product_forward::primitive_desc fwd_pd_;
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_data bwd_data_;
  dnnl::inner_product_backward_weights bwd_weights_;
  dnnl::memory src_, weights_, bias_, dst_;
  dnnl::memory diff_src_, diff_weights_, diff_bias_, diff_dst_;
  // oneDNN overwrites weight gradients; Caffe accumulates them.
  Blob weight_diff_scratch_;
  Blob bias_diff_scratch_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_INNER_PRODUCT_LAYER_HPP_
