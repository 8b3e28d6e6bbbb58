#include "caffe/layers/mvn_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void MVNLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& in = *bottom[0];
  LAYER_REQUIRE(in.num_axes() >= 1)
      << "bottom '" << bottom_name(0) << "' must have at least one axis, found a scalar";
  const int64_t channels = in.num_axes() >= 2 ? in.shape(1) : 1;
  groups_ = layer_param_.mvn_param().across_channels() ? in.shape(0) : in.shape(0) * channels;
  dim_ = groups_ == 0 ? 0 : in.count() / groups_;
  ResizeScratch(&stddev_, groups_, "the per-group deviation");
  top[0]->ReshapeLike(in);
}

void MVNLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const MVNParameter& p = layer_param_.mvn_param();
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (int64_t g = 0; g < groups_; ++g) {
    const float* xg = x + g * dim_;
    float* yg = y + g * dim_;
    double sum = 0;
    for (int64_t j = 0; j < dim_; ++j) sum += xg[j];
    const double mean = dim_ > 0 ? sum / dim_ : 0;
    if (!p.normalize_variance()) {
      for (int64_t j = 0; j < dim_; ++j) yg[j] = static_cast<float>(xg[j] - mean);
      continue;
    }
    // Two passes: the variance of centred values does not cancel catastrophically.
    double sq = 0;
    for (int64_t j = 0; j < dim_; ++j) sq += (xg[j] - mean) * (xg[j] - mean);
    stddev_[g] = std::sqrt(dim_ > 0 ? sq / dim_ : 0);
    const double inv = 1.0 / (stddev_[g] + p.eps());
    for (int64_t j = 0; j < dim_; ++j) yg[j] = static_cast<float>((xg[j] - mean) * inv);
  }
}

void MVNLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const MVNParameter& p = layer_param_.mvn_param();
  const float* y = top[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  for (int64_t g = 0; g < groups_; ++g) {
    const float* yg = y + g * dim_;
    const float* dyg = dy + g * dim_;
    float* dxg = dx + g * dim_;
    // Both means are taken before dx overwrites dy in place.
    double sum_dy = 0, sum_y_dy = 0;
    for (int64_t j = 0; j < dim_; ++j) {
      sum_dy += dyg[j];
      sum_y_dy += double(yg[j]) * dyg[j];
    }
    const double mean_dy = dim_ > 0 ? sum_dy / dim_ : 0;
    if (!p.normalize_variance()) {
      for (int64_t j = 0; j < dim_; ++j) dxg[j] = static_cast<float>(dyg[j] - mean_dy);
      continue;
    }
    // With s the standard deviation and d = s + eps, y = (x - mean) / d gives
    // dx = (dy - mean(dy) - y * mean(y dy) * d / s) / d. A constant group (s = 0)
    // has y = 0, so its last term vanishes.
    const double s = stddev_[g];
    const double d = s + p.eps();
    const double mean_y_dy = dim_ > 0 ? sum_y_dy / dim_ : 0;
    const double k = s > 0 ? mean_y_dy * d / s : 0;
    for (int64_t j = 0; j < dim_; ++j) {
      dxg[j] = static_cast<float>((dyg[j] - mean_dy - yg[j] * k) / d);
    }
  }
}

REGISTER_LAYER_CLASS(MVN);

}  // namespace caffe
