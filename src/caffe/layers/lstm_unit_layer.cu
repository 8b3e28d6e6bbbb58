// LSTMUnit on the device: the functors of lstm_unit_layer.hpp, which the CPU passes
// run in a host loop, launched over the N x D elements.
#include "caffe/layers/lstm_unit_layer.hpp"

#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

void LSTMUnitLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(
      top[0]->count(),
      LSTMUnitForward{bottom[0]->gpu_data(), bottom[1]->gpu_data(), bottom[2]->gpu_data(),
                      top[0]->mutable_gpu_data(), top[1]->mutable_gpu_data(), hidden_dim_});
}

void LSTMUnitLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                 const vector<Blob*>& bottom) {
  RefuseGradientToCont(propagate_down);
  if (!propagate_down[0] && !propagate_down[1]) return;
  LaunchElementwise(
      top[0]->count(),
      LSTMUnitBackward{bottom[0]->gpu_data(), bottom[1]->gpu_data(), bottom[2]->gpu_data(),
                       top[0]->gpu_diff(), top[1]->gpu_diff(),
                       propagate_down[0] ? bottom[0]->mutable_gpu_diff() : nullptr,
                       propagate_down[1] ? bottom[1]->mutable_gpu_diff() : nullptr, hidden_dim_});
}

}  // namespace caffe
