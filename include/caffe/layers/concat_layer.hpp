// Joins the bottoms along `axis` (legacy: concat_dim); every other axis must agree.
// A single bottom passes through by sharing its data and diff.
#ifndef CAFFE_LAYERS_CONCAT_LAYER_HPP_
#define CAFFE_LAYERS_CONCAT_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class ConcatLayer : public Layer {
 public:
  explicit ConcatLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Concat"; }
  int MinBottomBlobs() const override { return 1; }
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

  int axis_ = 1;
  int64_t outer_ = 1;  // product of the axes before axis_
  int64_t inner_ = 1;  // product of the axes after it
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_CONCAT_LAYER_HPP_
