#include "caffe/layers/elu_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void ELULayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float alpha = layer_param_.elu_param().alpha();
  const float* x = bottom[0]->cpu_data();
  if (bottom[0] == top[0] && alpha < 0) {
    bottom_copy_.CopyFrom(*bottom[0], false, true);
    x = bottom_copy_.cpu_data();
  }
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : alpha * std::expm1(x[i]);
}

void ELULayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float alpha = layer_param_.elu_param().alpha();
  // For x <= 0, dy/dx = alpha * exp(x) = y + alpha. With alpha >= 0, y > 0 exactly
  // where x > 0, so y alone decides the branch even after an in-place forward.
  const bool in_place = bottom[0] == top[0];
  const float* x = in_place ? (alpha < 0 ? bottom_copy_.cpu_data() : top[0]->cpu_data())
                            : bottom[0]->cpu_data();
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : dy[i] * (y[i] + alpha);
}

REGISTER_LAYER_CLASS(ELU);

}  // namespace caffe
