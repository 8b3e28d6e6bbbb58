// Splits the bottom along `axis` (legacy: slice_dim) into the tops, at the given
// slice_points (one fewer than the tops) or into equal parts. A single top passes
// the bottom through by sharing its data and diff.
#ifndef CAFFE_LAYERS_SLICE_LAYER_HPP_
#define CAFFE_LAYERS_SLICE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class SliceLayer : public Layer {
 public:
  explicit SliceLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Slice"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }

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

#endif  // CAFFE_LAYERS_SLICE_LAYER_HPP_
