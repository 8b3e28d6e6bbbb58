// Fully connected layer: top = bottom (flattened from `axis`) x W^T + b.
#ifndef CAFFE_LAYERS_INNER_PRODUCT_LAYER_HPP_
#define CAFFE_LAYERS_INNER_PRODUCT_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class InnerProductLayer : public Layer {
 public:
  explicit InnerProductLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "InnerProduct"; }
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

  int M_ = 0;  // rows: product of axes before `axis`
  int K_ = 0;  // inputs per row
  int N_ = 0;  // outputs
  bool bias_term_ = true;
  bool transpose_ = false;  // weights stored K x N instead of N x K
  Blob bias_multiplier_;   // a column of ones, so the bias add is one GEMM

 private:
  // Both modes' passes: the host products, or for Mode::GPU the same ones with cuBLAS
  // on device memory (mode_math.hpp).
  void ForwardOn(Mode mode, const vector<Blob*>& bottom, const vector<Blob*>& top);
  void BackwardOn(Mode mode, const vector<Blob*>& top, const vector<bool>& propagate_down,
                  const vector<Blob*>& bottom);
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_INNER_PRODUCT_LAYER_HPP_
