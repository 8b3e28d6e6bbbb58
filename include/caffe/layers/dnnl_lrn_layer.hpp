// Local response normalization on oneDNN (engine: DNNL) for ACROSS_CHANNELS, whose
// definition (window clipped at the channel borders, divided by the full local_size)
// is oneDNN's lrn_across_channels. WITHIN_CHANNEL runs the reference LRNLayer code.
// oneDNN's LRN kernels for plain NCHW are its slow reference loops, so the data is
// reordered into the channel-blocked layout around them.
#ifndef CAFFE_LAYERS_DNNL_LRN_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_LRN_LAYER_HPP_

#ifdef USE_DNNL

#include "caffe/layers/lrn_layer.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlLRNLayer : public LRNLayer {
 public:
  explicit DnnlLRNLayer(const LayerParameter& param) : LRNLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  bool uses_dnnl() const { return supported_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  void Build(const dnnl::memory::desc& layout);

  bool supported_ = false;
  vector<int64_t> built_shape_;
  int built_threads_ = 0;
  dnnl::lrn_forward fwd_;
  dnnl::lrn_backward bwd_;
  DnnlLayoutBridge src_, dst_, diff_dst_, diff_src_;
  dnnl::memory workspace_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_LRN_LAYER_HPP_
