// ELU on the device; in-place handling as on the CPU path (a copy of the input only
// when alpha < 0, where the sign of y no longer tells that of x).
#include "caffe/layers/elu_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct ELUForward {
  const float* x;
  float* y;
  float alpha;
  __device__ void operator()(int64_t i) const { y[i] = x[i] > 0 ? x[i] : alpha * expm1f(x[i]); }
};

// For x <= 0, dy/dx = alpha * exp(x) = y + alpha.
struct ELUBackward {
  const float* x;
  const float* y;
  const float* dy;
  float* dx;
  float alpha;
  __device__ void operator()(int64_t i) const {
    dx[i] = x[i] > 0 ? dy[i] : dy[i] * (y[i] + alpha);
  }
};

}  // namespace

void ELULayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float alpha = layer_param_.elu_param().alpha();
  const float* x = bottom[0]->gpu_data();
  if (bottom[0] == top[0] && alpha < 0) {
    CopyDataOnGpu(*bottom[0], &bottom_copy_);
    x = bottom_copy_.gpu_data();
  }
  LaunchElementwise(bottom[0]->count(), ELUForward{x, top[0]->mutable_gpu_data(), alpha});
}

void ELULayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float alpha = layer_param_.elu_param().alpha();
  // With alpha >= 0, y > 0 exactly where x > 0, so y alone decides the branch in place.
  const bool in_place = bottom[0] == top[0];
  const float* x = in_place ? (alpha < 0 ? bottom_copy_.gpu_data() : top[0]->gpu_data())
                            : bottom[0]->gpu_data();
  LaunchElementwise(bottom[0]->count(),
                    ELUBackward{x, top[0]->gpu_data(), top[0]->gpu_diff(),
                                bottom[0]->mutable_gpu_diff(), alpha});
}

}  // namespace caffe
