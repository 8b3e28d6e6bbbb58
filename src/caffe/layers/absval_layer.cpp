#include "caffe/layers/absval_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void AbsValLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (bottom[0] == top[0]) bottom_copy_.CopyFrom(*bottom[0], false, true);
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
}

void AbsValLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* x = bottom[0] == top[0] ? bottom_copy_.cpu_data() : bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : (x[i] < 0 ? -dy[i] : 0.f);
}

REGISTER_LAYER_CLASS(AbsVal);

}  // namespace caffe
