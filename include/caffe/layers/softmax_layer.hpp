// Softmax over one axis (softmax_param.axis, default 1): for every position of the
// other axes, y_c = exp(x_c - max) / sum_k exp(x_k - max). Subtracting the max keeps
// exp from overflowing and does not change the result. Works in place.
#ifndef CAFFE_LAYERS_SOFTMAX_LAYER_HPP_
#define CAFFE_LAYERS_SOFTMAX_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class SoftmaxLayer : public Layer {
 public:
  explicit SoftmaxLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Softmax"; }
  int ExactNumBottomBlobs() const override { return 1; }
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

  int64_t outer_ = 0;     // product of the axes before the softmax axis
  int64_t channels_ = 0;  // length of the softmax axis
  int64_t inner_ = 0;     // product of the axes after it
  // Per inner position: the running max, then the sum of exponentials (or, in
  // Backward, the dot product of top diff and top data).
  vector<float> scratch_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SOFTMAX_LAYER_HPP_
