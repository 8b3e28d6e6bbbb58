// Elementwise combination of equally shaped bottoms: SUM (each bottom weighted by its
// `coeff`, default 1), PROD, or MAX (the gradient goes to the bottom that held the
// maximum; on ties the first such bottom). PROD's gradient is the product of the
// other bottoms; with stable_prod_grad false it is top / bottom instead (Caffe's
// cheaper form, wrong where a bottom is 0).
#ifndef CAFFE_LAYERS_ELTWISE_LAYER_HPP_
#define CAFFE_LAYERS_ELTWISE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class EltwiseLayer : public Layer {
 public:
  explicit EltwiseLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Eltwise"; }
  // Elementwise: any layout its bottoms and tops share.
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kFollowsItsBlobs;
  }
  int MinBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  EltwiseParameter::EltwiseOp op_ = EltwiseParameter::SUM;
  vector<float> coeffs_;  // one per bottom (SUM)
  bool stable_prod_grad_ = true;
  vector<int> max_index_;  // MAX: which bottom each top element came from
#ifdef USE_CUDA
  Blob max_index_gpu_;  // the same on the device, as floats (exact for any bottom count)
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_ELTWISE_LAYER_HPP_
