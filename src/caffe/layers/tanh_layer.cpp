#include "caffe/layers/tanh_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void TanHLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = std::tanh(x[i]);
  });
}

void TanHLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  // Written in terms of the output so that in-place use (x overwritten) works.
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * (1.f - y[i] * y[i]);
  });
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
