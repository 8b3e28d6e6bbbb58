// Adds a bias broadcast over the axes it does not cover: y = x + b, where b's shape
// matches x's axes [axis, axis + b.num_axes). b is either a learned blob, shaped by
// `axis` and `num_axes` (-1: every remaining axis), or the second bottom. A 0-axis
// (scalar) bias applies to every element.
#ifndef CAFFE_LAYERS_BIAS_LAYER_HPP_
#define CAFFE_LAYERS_BIAS_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class BiasLayer : public Layer {
 public:
  explicit BiasLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Bias"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
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

  // x viewed as outer_ x dim_ x inner_, with the bias covering the middle part.
  int64_t outer_ = 1;
  int64_t dim_ = 1;
  int64_t inner_ = 1;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_BIAS_LAYER_HPP_
