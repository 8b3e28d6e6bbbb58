// BNLL (softplus) on the device, with the CPU path's overflow-free forms.
#include "caffe/layers/bnll_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|).
struct BNLLForward {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const {
    y[i] = fmaxf(x[i], 0.f) + log1pf(expf(-fabsf(x[i])));
  }
};

// sigmoid(x) = 1 - exp(-y), from the output so in place needs no copy.
struct BNLLBackward {
  const float* y;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = -dy[i] * expm1f(-y[i]); }
};

}  // namespace

void BNLLLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    BNLLForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data()});
}

void BNLLLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(bottom[0]->count(), BNLLBackward{top[0]->gpu_data(), top[0]->gpu_diff(),
                                                     bottom[0]->mutable_gpu_diff()});
}

}  // namespace caffe
