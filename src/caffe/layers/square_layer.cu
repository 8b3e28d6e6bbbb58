// Square on the device: the CPU path's two formulas, one grid-stride kernel each.
#include "caffe/layers/square_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct SquareForward {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = x[i] * x[i]; }
};

// Evaluated as (2 x) dy like the CPU loop; 2 x is exact, so both round the same product.
struct SquareBackward {
  const float* x;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = 2.f * x[i] * dy[i]; }
};

}  // namespace

void SquareLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(),
                    SquareForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data()});
}

void SquareLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(bottom[0]->count(), SquareBackward{bottom[0]->gpu_data(), top[0]->gpu_diff(),
                                                       bottom[0]->mutable_gpu_diff()});
}

}  // namespace caffe
