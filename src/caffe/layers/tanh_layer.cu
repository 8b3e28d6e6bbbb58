// TanH on the device.
#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/tanh_layer.hpp"

namespace caffe {

namespace {

struct TanHForward {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = tanhf(x[i]); }
};

// From the output, so in-place use (x overwritten) works.
struct TanHBackward {
  const float* y;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i] * (1.f - y[i] * y[i]); }
};

}  // namespace

void TanHLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    TanHForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data()});
}

void TanHLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(bottom[0]->count(), TanHBackward{top[0]->gpu_data(), top[0]->gpu_diff(),
                                                     bottom[0]->mutable_gpu_diff()});
}

}  // namespace caffe
