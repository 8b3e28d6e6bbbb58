// Swish on the device, the same arithmetic as the CPU path.
#include "caffe/layers/swish_layer.hpp"

#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct SwishForward {
  const float* x;
  float* s;
  float* y;
  float beta;
  __device__ void operator()(int64_t i) const {
    const float v = x[i];  // in place, y[i] overwrites it
    s[i] = 1.f / (1.f + expf(-beta * v));
    y[i] = v * s[i];
  }
};

struct SwishBackward {
  const float* s;
  const float* y;
  const float* dy;
  float* dx;
  float beta;
  __device__ void operator()(int64_t i) const {
    dx[i] = dy[i] * (s[i] + beta * y[i] * (1.f - s[i]));
  }
};

}  // namespace

void SwishLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    SwishForward{bottom[0]->gpu_data(), sigmoid_.mutable_gpu_data(),
                                 top[0]->mutable_gpu_data(), layer_param_.swish_param().beta()});
}

void SwishLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(
      bottom[0]->count(),
      SwishBackward{sigmoid_.gpu_data(), top[0]->gpu_data(), top[0]->gpu_diff(),
                    bottom[0]->mutable_gpu_diff(), layer_param_.swish_param().beta()});
}

}  // namespace caffe
