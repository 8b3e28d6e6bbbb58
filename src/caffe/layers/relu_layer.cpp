#include "caffe/layers/relu_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void ReLULayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const float slope = layer_param_.relu_param().negative_slope();
  const int64_t n = bottom[0]->count();
  // Branch-free, so random signs cost no mispredictions and the loop vectorises.
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = std::max(x[i], 0.f) + slope * std::min(x[i], 0.f);
  });
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
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * (x[i] > 0 ? 1.f : slope);
  });
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
