#include "caffe/layers/log_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void LogLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LogParameter& p = layer_param_.log_param();
  LAYER_REQUIRE(p.base() == -1 || (p.base() > 0 && p.base() != 1))
      << "log_param.base must be positive and not 1 (or -1 for e), found " << p.base();
  base_scale_ = p.base() == -1 ? 1.f : 1.f / std::log(p.base());
}

void LogLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LogParameter& p = layer_param_.log_param();
  const float scale = p.scale(), shift = p.shift();
  if (bottom[0] == top[0]) bottom_copy_.CopyFrom(*bottom[0], false, true);
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = base_scale_ * std::log(shift + scale * x[i]);
}

void LogLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const LogParameter& p = layer_param_.log_param();
  const float scale = p.scale(), shift = p.shift();
  const float numerator = scale * base_scale_;
  const float* x = bottom[0] == top[0] ? bottom_copy_.cpu_data() : bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * numerator / (shift + scale * x[i]);
}

REGISTER_LAYER_CLASS(Log);

}  // namespace caffe
