// Gives the bottom a new shape without copying: the top shares data and diff.
// reshape_param.shape lists the new dimensions, where 0 copies the bottom's
// dimension at the same position and one -1 is inferred from the element count.
// axis and num_axes restrict the replacement to a range of the bottom's axes.
#ifndef CAFFE_LAYERS_RESHAPE_LAYER_HPP_
#define CAFFE_LAYERS_RESHAPE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class ReshapeLayer : public Layer {
 public:
  explicit ReshapeLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Reshape"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
  // The same views in GPU mode: nothing runs, so nothing is copied to the host (the
  // base class would call the empty CPU pass and log that the layer lacks a GPU path).
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}

  vector<int> copy_axes_;    // positions in the new shape holding 0
  int inferred_axis_ = -1;   // position of the -1, if any
  int64_t constant_count_ = 1;  // product of the explicitly given dimensions
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_RESHAPE_LAYER_HPP_
