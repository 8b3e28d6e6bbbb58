// Dropout: in TRAIN each element is kept with probability 1 - p (mask drawn from the
// context's generator) and zeroed otherwise. With scale_train (Caffe's default) the
// kept values are scaled by 1/(1-p) so TEST is the identity; without it TRAIN leaves
// kept values alone and TEST multiplies by (1-p). Either way expectations match.
#ifndef CAFFE_LAYERS_DROPOUT_LAYER_HPP_
#define CAFFE_LAYERS_DROPOUT_LAYER_HPP_

#include <memory>

#include "caffe/layers/neuron_layer.hpp"

namespace caffe {

class DropoutLayer : public NeuronLayer {
 public:
  explicit DropoutLayer(const LayerParameter& param) : NeuronLayer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Dropout"; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // The factor applied to every value in the current phase (kept values in TRAIN).
  float PhaseScale() const;

  float dropout_ratio_ = 0.5f;
  bool scale_train_ = true;
  vector<unsigned> mask_;  // 1 = kept, from the last TRAIN forward
#ifdef USE_CUDA
  // The GPU path's mask (1 = kept), on the device, from the last TRAIN Forward_gpu;
  // the buffer only grows, device_mask_count_ says how much of it is the mask.
  std::unique_ptr<SyncedMemory> device_mask_;
  int64_t device_mask_count_ = 0;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_DROPOUT_LAYER_HPP_
