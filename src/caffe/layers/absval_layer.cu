// AbsVal on the device; in place it keeps a device copy of the input for the sign.
#include "caffe/layers/absval_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct AbsValForward {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = fabsf(x[i]); }
};

// sign(x) * dy, with 0 at x == 0 as on the CPU path.
struct AbsValBackward {
  const float* x;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = x[i] > 0 ? dy[i] : (x[i] < 0 ? -dy[i] : 0.f);
  }
};

}  // namespace

void AbsValLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (bottom[0] == top[0]) CopyDataOnGpu(*bottom[0], &bottom_copy_);
  LaunchElementwise(bottom[0]->count(),
                    AbsValForward{bottom[0]->gpu_data(), top[0]->mutable_gpu_data()});
}

void AbsValLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* x = bottom[0] == top[0] ? bottom_copy_.gpu_data() : bottom[0]->gpu_data();
  LaunchElementwise(bottom[0]->count(),
                    AbsValBackward{x, top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff()});
}

}  // namespace caffe
