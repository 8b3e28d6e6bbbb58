#include "caffe/layers/exp_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void ExpLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ExpParameter& p = layer_param_.exp_param();
  LAYER_REQUIRE(p.base() == -1 || p.base() > 0)
      << "exp_param.base must be positive (or -1 for e), found " << p.base();
  // base^(shift + scale x) = base^shift * exp(ln(base) * scale * x)
  const float log_base = p.base() == -1 ? 1.f : std::log(p.base());
  inner_scale_ = log_base * p.scale();
  outer_scale_ = p.shift() == 0 ? 1.f : std::exp(log_base * p.shift());
}

void ExpLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = outer_scale_ * std::exp(inner_scale_ * x[i]);
}

void ExpLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * inner_scale_;
}

REGISTER_LAYER_CLASS(Exp);

}  // namespace caffe
