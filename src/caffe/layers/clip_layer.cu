// Clip on the device; in place, a device copy of the input as on the CPU path.
#include "caffe/layers/clip_layer.hpp"

#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct ClipForward {
  const float* x;
  float* y;
  float lo, hi;
  __device__ void operator()(int64_t i) const { y[i] = fminf(fmaxf(x[i], lo), hi); }
};

struct ClipBackward {
  const float* x;
  const float* dy;
  float* dx;
  float lo, hi;
  __device__ void operator()(int64_t i) const { dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0.f; }
};

}  // namespace

void ClipLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float lo = layer_param_.clip_param().min(), hi = layer_param_.clip_param().max();
  if (bottom[0] == top[0]) CopyDataOnGpu(*bottom[0], &bottom_copy_);
  LaunchElementwise(bottom[0]->count(),
                    ClipForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), lo, hi});
}

void ClipLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float lo = layer_param_.clip_param().min(), hi = layer_param_.clip_param().max();
  const float* x = bottom[0] == top[0] ? bottom_copy_.gpu_data() : bottom[0]->gpu_data();
  LaunchElementwise(bottom[0]->count(),
                    ClipBackward{x, top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(), lo, hi});
}

}  // namespace caffe
