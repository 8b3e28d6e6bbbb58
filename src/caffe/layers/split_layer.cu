// Device path of SplitLayer's backward pass (forward has nothing to do: the tops
// share the bottom's data): the bottom's gradient is the sum of the tops' gradients.
#include "caffe/layers/split_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SplitLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  float* dx = bottom[0]->mutable_gpu_diff();
  math::gpu_copy(count, top[0]->gpu_diff(), dx);
  for (size_t i = 1; i < top.size(); ++i) math::gpu_axpy(count, 1.f, top[i]->gpu_diff(), dx);
}

}  // namespace caffe
