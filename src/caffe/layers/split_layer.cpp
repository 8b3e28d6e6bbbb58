#include "caffe/layers/split_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SplitLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 0; i < top.size(); ++i) {
    // In place, the summed gradient would overwrite a top's own diff while reading it.
    LAYER_REQUIRE(top[i] != bottom[0])
        << "top '" << top_name(static_cast<int>(i)) << "' cannot be the bottom itself";
    top[i]->ReshapeLike(*bottom[0]);
    top[i]->ShareData(*bottom[0]);
  }
}

void SplitLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  float* dx = bottom[0]->mutable_cpu_diff();
  math::copy(count, top[0]->cpu_diff(), dx);
  for (size_t i = 1; i < top.size(); ++i) math::axpy(count, 1.f, top[i]->cpu_diff(), dx);
}

REGISTER_LAYER_CLASS(Split);

}  // namespace caffe
