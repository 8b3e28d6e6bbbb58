// Crops bottom[0] to the shape of bottom[1] on every axis from `axis` on, starting at
// `offset` (one value for all cropped axes, one per cropped axis, or none for 0).
// bottom[1] only supplies the shape and receives no gradient.
#ifndef CAFFE_LAYERS_CROP_LAYER_HPP_
#define CAFFE_LAYERS_CROP_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class CropLayer : public Layer {
 public:
  explicit CropLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Crop"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  vector<int64_t> offsets_;  // start along every axis of bottom[0] (0 before `axis`)
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_CROP_LAYER_HPP_
