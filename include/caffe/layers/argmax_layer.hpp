// Indices (and optionally values) of the top_k largest entries, either along `axis`
// or, without an axis, over everything after the first axis. Ties go to the larger
// index, as in BVLC Caffe. Without an axis the top is N x 1 x K (N x 2 x K with
// out_max_val: indices then values), padded with 1s to the bottom's number of axes.
// It has no gradient.
#ifndef CAFFE_LAYERS_ARGMAX_LAYER_HPP_
#define CAFFE_LAYERS_ARGMAX_LAYER_HPP_

#include <utility>

#include "caffe/layer.hpp"

namespace caffe {

class ArgMaxLayer : public Layer {
 public:
  explicit ArgMaxLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "ArgMax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // Throws: the layer's output has no gradient that could be propagated.
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

  bool out_max_val_ = false;
  int64_t top_k_ = 1;
  bool has_axis_ = false;
  int axis_ = 0;
  vector<std::pair<float, int64_t>> candidates_;  // scratch: (value, index) along the axis
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_ARGMAX_LAYER_HPP_
