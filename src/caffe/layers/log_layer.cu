// Log on the device; in place it keeps a device copy of the input for the gradient.
#include "caffe/layers/log_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"

namespace caffe {

namespace {

struct LogForward {
  const float* x;
  float* y;
  float scale, shift, base_scale;
  __device__ void operator()(int64_t i) const { y[i] = base_scale * logf(shift + scale * x[i]); }
};

struct LogBackward {
  const float* x;
  const float* dy;
  float* dx;
  float scale, shift, numerator;  // numerator = scale / ln(base)
  __device__ void operator()(int64_t i) const {
    dx[i] = dy[i] * numerator / (shift + scale * x[i]);
  }
};

}  // namespace

void LogLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LogParameter& p = layer_param_.log_param();
  if (bottom[0] == top[0]) CopyDataOnGpu(*bottom[0], &bottom_copy_);
  LaunchElementwise(bottom[0]->count(), LogForward{bottom[0]->gpu_data(),
                                                   top[0]->mutable_gpu_data(), p.scale(),
                                                   p.shift(), base_scale_});
}

void LogLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const LogParameter& p = layer_param_.log_param();
  const float* x = bottom[0] == top[0] ? bottom_copy_.gpu_data() : bottom[0]->gpu_data();
  LaunchElementwise(bottom[0]->count(),
                    LogBackward{x, top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(), p.scale(),
                                p.shift(), p.scale() * base_scale_});
}

}  // namespace caffe
