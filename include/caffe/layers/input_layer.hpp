// Net inputs: tops whose shapes come from input_param and whose values are written
// by the caller (or a data feeder) before Forward. Nothing flows backward.
#ifndef CAFFE_LAYERS_INPUT_LAYER_HPP_
#define CAFFE_LAYERS_INPUT_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class InputLayer : public Layer {
 public:
  explicit InputLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // The caller may reshape the inputs between passes; the layer leaves them alone.
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  const char* type() const override { return "Input"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_INPUT_LAYER_HPP_
