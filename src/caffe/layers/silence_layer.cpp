#include "caffe/layers/silence_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SilenceLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  // Bottom diffs are overwritten by convention, so they must be cleared explicitly.
  for (size_t i = 0; i < bottom.size(); ++i) {
    if (propagate_down[i]) math::set(bottom[i]->count(), 0.f, bottom[i]->mutable_cpu_diff());
  }
}

REGISTER_LAYER_CLASS(Silence);

}  // namespace caffe
