// Mean-variance normalization: subtracts the mean and (with normalize_variance)
// divides by (standard deviation + eps), per example and channel, or per example
// when across_channels. Works in place: the gradient needs only the output.
#ifndef CAFFE_LAYERS_MVN_LAYER_HPP_
#define CAFFE_LAYERS_MVN_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class MVNLayer : public Layer {
 public:
  explicit MVNLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "MVN"; }
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

  int64_t groups_ = 0;  // normalized groups: N, or N * C
  int64_t dim_ = 0;     // elements per group
  vector<double> stddev_;  // per group, from the last forward pass (without eps)
#ifdef USE_CUDA
  Blob stddev_gpu_;  // the same, on the device (in float)
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_MVN_LAYER_HPP_
