// Contrastive loss for pairs (a_n, b_n) with similarity labels y_n (nonzero =
// similar), d_n = ||a_n - b_n||:
//   loss = 1/(2N) sum_n [ y_n d_n^2 + (1 - y_n) max(margin - d_n, 0)^2 ],
// or with legacy_version the dissimilar term max(margin - d_n^2, 0), as in the
// original Caffe layer.
#ifndef CAFFE_LAYERS_CONTRASTIVE_LOSS_LAYER_HPP_
#define CAFFE_LAYERS_CONTRASTIVE_LOSS_LAYER_HPP_

#include "caffe/layers/loss_layer.hpp"

namespace caffe {

class ContrastiveLossLayer : public LossLayer {
 public:
  explicit ContrastiveLossLayer(const LayerParameter& param) : LossLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "ContrastiveLoss"; }
  int ExactNumBottomBlobs() const override { return 3; }
  // Both halves of the pair get gradients; the similarity label does not.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  int64_t num_ = 0;
  int64_t dim_ = 0;
  Blob diff_;               // a - b, from the last forward pass
  vector<float> dist_sq_;   // ||a_n - b_n||^2, from the last forward pass
#ifdef USE_CUDA
  Blob dist_sq_gpu_;        // the same, on the device
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_CONTRASTIVE_LOSS_LAYER_HPP_
