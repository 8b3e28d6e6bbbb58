#include "caffe/layers/relu_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void ReLULayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const float slope = layer_param_.relu_param().negative_slope();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : slope * x[i];
}

void ReLULayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  // In place, bottom data already holds y; y > 0 exactly where x > 0, so the mask
  // reads the same either way.
  const float* x = bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const float slope = layer_param_.relu_param().negative_slope();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : slope * dy[i];
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
