// Exp on the device: y = outer_scale_ * exp(inner_scale_ * x) (scales from LayerSetUp).
#include "caffe/layers/exp_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct ExpForward {
  const float* x;
  float* y;
  float inner_scale, outer_scale;
  __device__ void operator()(int64_t i) const { y[i] = outer_scale * expf(inner_scale * x[i]); }
};

// From the output, so in-place use works.
struct ExpBackward {
  const float* y;
  const float* dy;
  float* dx;
  float inner_scale;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i] * y[i] * inner_scale; }
};

}  // namespace

void ExpLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LaunchElementwise(bottom[0]->count(), ExpForward{bottom[0]->gpu_data(),
                                                   top[0]->mutable_gpu_data(), inner_scale_,
                                                   outer_scale_});
}

void ExpLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  LaunchElementwise(bottom[0]->count(),
                    ExpBackward{top[0]->gpu_data(), top[0]->gpu_diff(),
                                bottom[0]->mutable_gpu_diff(), inner_scale_});
}

}  // namespace caffe
