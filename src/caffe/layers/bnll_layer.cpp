#include "caffe/layers/bnll_layer.hpp"

#include <algorithm>
#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void BNLLLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  // log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): exp never overflows.
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::max(x[i], 0.f) + std::log1p(std::exp(-std::fabs(x[i])));
  }
}

void BNLLLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  // sigmoid(x) = 1 - exp(-softplus(x)); expm1 keeps it accurate where it is tiny.
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = -dy[i] * std::expm1(-y[i]);
}

REGISTER_LAYER_CLASS(BNLL);

}  // namespace caffe
