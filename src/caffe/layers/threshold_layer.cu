// Threshold on the device. The backward writes zeros, as the CPU path does (the
// step function's derivative is zero wherever it exists).
#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/threshold_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

struct ThresholdForward {
  const float* x;
  float* y;
  float threshold;
  __device__ void operator()(int64_t i) const { y[i] = x[i] > threshold ? 1.f : 0.f; }
};

}  // namespace

void ThresholdLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    ThresholdForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data(),
                                     layer_param_.threshold_param().threshold()});
}

void ThresholdLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (propagate_down[0] && bottom[0]->count() > 0) {
    math::gpu_set(bottom[0]->count(), 0.f, bottom[0]->mutable_gpu_diff());
  }
}

}  // namespace caffe
