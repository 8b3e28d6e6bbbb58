// ReLU on the device: the same branch-free formula as the CPU path.
#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/relu_layer.hpp"

namespace caffe {

namespace {

// std::max(x, 0) + slope * std::min(x, 0) spelled as std::max / std::min compute it
// ((a < b) ? b : a and (b < a) ? b : a), so a NaN input stays NaN as on the CPU (and
// in cuDNN's activation, set to CUDNN_PROPAGATE_NAN). fmaxf / fminf would return the
// other operand, 0, and hide the NaN from the solver's non-finite loss check.
struct ReLUForward {
  const float* x;
  float* y;
  float slope;
  __device__ void operator()(int64_t i) const {
    const float v = x[i];
    y[i] = (v < 0.f ? 0.f : v) + slope * (0.f < v ? 0.f : v);
  }
};

// Reads the bottom buffer, as the CPU path does: in place it holds y, which is > 0
// exactly where the input was (for slope >= 0).
struct ReLUBackward {
  const float* x;
  const float* dy;
  float* dx;
  float slope;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i] * (x[i] > 0 ? 1.f : slope); }
};

}  // namespace

void ReLULayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float slope = layer_param_.relu_param().negative_slope();
  LaunchElementwise(bottom[0]->count(),
                    ReLUForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), slope});
}

void ReLULayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float slope = layer_param_.relu_param().negative_slope();
  LaunchElementwise(bottom[0]->count(),
                    ReLUBackward{bottom[0]->gpu_data(), top[0]->gpu_diff(),
                                 bottom[0]->mutable_gpu_diff(), slope});
}

}  // namespace caffe
