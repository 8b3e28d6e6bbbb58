// ReLU on oneDNN (engine: DNNL): eltwise_relu with alpha = negative_slope, over the
// blob viewed as one flat vector (the operation is elementwise, so the shape does not
// matter). Works in place like the reference ReLULayer.
#ifndef CAFFE_LAYERS_DNNL_RELU_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_RELU_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/relu_layer.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlReLULayer : public ReLULayer {
 public:
  explicit DnnlReLULayer(const LayerParameter& param) : ReLULayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // Every shape runs on oneDNN; an empty blob has nothing to run.
  bool uses_dnnl() const { return built_count_ > 0; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  int64_t built_count_ = -1;
  int built_threads_ = 0;
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_RELU_LAYER_HPP_
