// Reduces all axes from `axis` to the end with SUM, ASUM (sum of |x|), SUMSQ (sum of
// x^2) or MEAN, then multiplies by coeff; the top keeps the axes before `axis`
// (a scalar when axis is 0).
#ifndef CAFFE_LAYERS_REDUCTION_LAYER_HPP_
#define CAFFE_LAYERS_REDUCTION_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class ReductionLayer : public Layer {
 public:
  explicit ReductionLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Reduction"; }
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

  int64_t num_ = 0;   // number of reductions (product of the kept axes)
  int64_t dim_ = 0;   // elements per reduction
  float coeff_ = 1;   // coeff, divided by dim_ for MEAN
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_REDUCTION_LAYER_HPP_
