// Power on the device, with the CPU path's special cases: a constant output when
// power or scale is 0, and no pow() call for power 1 and 2. In place (power != 1) it
// keeps a device copy of the input for the gradient.
#include <cmath>

#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/power_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

struct LinearForward {  // power == 1
  const float* x;
  float* y;
  float scale, shift;
  __device__ void operator()(int64_t i) const { y[i] = shift + scale * x[i]; }
};

struct SquareForward {  // power == 2
  const float* x;
  float* y;
  float scale, shift;
  __device__ void operator()(int64_t i) const {
    const float base = shift + scale * x[i];
    y[i] = base * base;
  }
};

struct PowForward {
  const float* x;
  float* y;
  float scale, shift, power;
  __device__ void operator()(int64_t i) const { y[i] = powf(shift + scale * x[i], power); }
};

struct LinearBackward {  // power == 1: dx = power * scale * dy
  const float* dy;
  float* dx;
  float diff_scale;
  __device__ void operator()(int64_t i) const { dx[i] = diff_scale * dy[i]; }
};

struct SquareBackward {  // power == 2
  const float* x;
  const float* dy;
  float* dx;
  float scale, shift, diff_scale;
  __device__ void operator()(int64_t i) const {
    dx[i] = dy[i] * diff_scale * (shift + scale * x[i]);
  }
};

struct PowBackward {
  const float* x;
  const float* dy;
  float* dx;
  float scale, shift, power, diff_scale;
  __device__ void operator()(int64_t i) const {
    dx[i] = dy[i] * diff_scale * powf(shift + scale * x[i], power - 1);
  }
};

}  // namespace

void PowerLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const PowerParameter& p = layer_param_.power_param();
  const float power = p.power(), scale = p.scale(), shift = p.shift();
  const int64_t n = bottom[0]->count();
  float* y = top[0]->mutable_gpu_data();
  if (power == 0 || scale == 0) {
    // The constant is computed on the host exactly as the CPU path does (0^0 = 1).
    if (n > 0) math::gpu_set(n, std::pow(shift, power), y);
    return;
  }
  if (bottom[0] == top[0] && power != 1) CopyDataOnGpu(*bottom[0], &bottom_copy_);
  const float* x = bottom[0]->gpu_data();
  if (power == 1) {
    LaunchElementwise(n, LinearForward{x, y, scale, shift});
  } else if (power == 2) {
    LaunchElementwise(n, SquareForward{x, y, scale, shift});
  } else {
    LaunchElementwise(n, PowForward{x, y, scale, shift, power});
  }
}

void PowerLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const PowerParameter& p = layer_param_.power_param();
  const float power = p.power(), scale = p.scale(), shift = p.shift();
  const float diff_scale = power * scale;  // dy/dx = diff_scale * base^(power - 1)
  const int64_t n = bottom[0]->count();
  const float* dy = top[0]->gpu_diff();
  float* dx = bottom[0]->mutable_gpu_diff();
  if (diff_scale == 0) {
    if (n > 0) math::gpu_set(n, 0.f, dx);
    return;
  }
  if (power == 1) {
    LaunchElementwise(n, LinearBackward{dy, dx, diff_scale});
    return;
  }
  const float* x = bottom[0] == top[0] ? bottom_copy_.gpu_data() : bottom[0]->gpu_data();
  if (power == 2) {
    LaunchElementwise(n, SquareBackward{x, dy, dx, scale, shift, diff_scale});
  } else {
    LaunchElementwise(n, PowBackward{x, dy, dx, scale, shift, power, diff_scale});
  }
}

}  // namespace caffe
