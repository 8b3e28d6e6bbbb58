#include "caffe/layers/swish_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void SwishLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  NeuronLayer::Reshape(bottom, top);
  sigmoid_.ReshapeLike(*bottom[0]);
}

void SwishLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float beta = layer_param_.swish_param().beta();
  const float* x = bottom[0]->cpu_data();
  float* s = sigmoid_.mutable_cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) {
    s[i] = 1.f / (1.f + std::exp(-beta * x[i]));
    y[i] = x[i] * s[i];
  }
}

void SwishLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float beta = layer_param_.swish_param().beta();
  const float* s = sigmoid_.cpu_data();
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (s[i] + beta * y[i] * (1.f - s[i]));
}

REGISTER_LAYER_CLASS(Swish);

}  // namespace caffe
