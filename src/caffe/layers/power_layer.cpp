#include "caffe/layers/power_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void PowerLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const PowerParameter& p = layer_param_.power_param();
  const float power = p.power(), scale = p.scale(), shift = p.shift();
  const int64_t n = bottom[0]->count();
  float* y = top[0]->mutable_cpu_data();
  if (power == 0 || scale == 0) {
    // Constant output; 0^0 counts as 1, as std::pow has it.
    const float value = std::pow(shift, power);
    for (int64_t i = 0; i < n; ++i) y[i] = value;
    return;
  }
  if (bottom[0] == top[0] && power != 1) bottom_copy_.CopyFrom(*bottom[0], false, true);
  const float* x = bottom[0]->cpu_data();
  if (power == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = shift + scale * x[i];
  } else if (power == 2) {
    for (int64_t i = 0; i < n; ++i) {
      const float base = shift + scale * x[i];
      y[i] = base * base;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::pow(shift + scale * x[i], power);
  }
}

void PowerLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const PowerParameter& p = layer_param_.power_param();
  const float power = p.power(), scale = p.scale(), shift = p.shift();
  const float diff_scale = power * scale;  // dy/dx = diff_scale * base^(power - 1)
  const int64_t n = bottom[0]->count();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  if (diff_scale == 0) {
    for (int64_t i = 0; i < n; ++i) dx[i] = 0;
    return;
  }
  if (power == 1) {
    for (int64_t i = 0; i < n; ++i) dx[i] = diff_scale * dy[i];
    return;
  }
  const float* x = bottom[0] == top[0] ? bottom_copy_.cpu_data() : bottom[0]->cpu_data();
  if (power == 2) {
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * diff_scale * (shift + scale * x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dx[i] = dy[i] * diff_scale * std::pow(shift + scale * x[i], power - 1);
    }
  }
}

REGISTER_LAYER_CLASS(Power);

}  // namespace caffe
