// Device path of SilenceLayer's backward pass: zero gradients, written on the device
// so that nothing moves to the host.
#include "caffe/layers/silence_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SilenceLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  for (size_t i = 0; i < bottom.size(); ++i) {
    if (propagate_down[i]) math::gpu_set(bottom[i]->count(), 0.f, bottom[i]->mutable_gpu_diff());
  }
}

}  // namespace caffe
