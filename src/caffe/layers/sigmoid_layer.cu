// Sigmoid on the device, in the same tanh form as the CPU path (no overflow).
#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/sigmoid_layer.hpp"

namespace caffe {

namespace {

struct SigmoidForward {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = 0.5f * tanhf(0.5f * x[i]) + 0.5f; }
};

// From the output, so in-place use (x overwritten) works.
struct SigmoidBackward {
  const float* y;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i] * y[i] * (1.f - y[i]); }
};

}  // namespace

void SigmoidLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    SigmoidForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data()});
}

void SigmoidLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(bottom[0]->count(), SigmoidBackward{top[0]->gpu_data(), top[0]->gpu_diff(),
                                                        bottom[0]->mutable_gpu_diff()});
}

}  // namespace caffe
