#include "caffe/layers/dropout_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void DropoutLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const DropoutParameter& p = layer_param_.dropout_param();
  LAYER_REQUIRE(p.dropout_ratio() >= 0.f && p.dropout_ratio() < 1.f)
      << "dropout_param.dropout_ratio must be in [0, 1), found " << p.dropout_ratio();
  dropout_ratio_ = p.dropout_ratio();
  scale_train_ = p.scale_train();
}

float DropoutLayer::PhaseScale() const {
  const float keep = 1.f - dropout_ratio_;
  if (phase_ == TRAIN) return scale_train_ ? 1.f / keep : 1.f;
  return scale_train_ ? 1.f : keep;
}

void DropoutLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const float scale = PhaseScale();
  if (phase_ != TRAIN) {
    math::scale(count, scale, x, y);
    return;
  }
  ResizeScratch(&mask_, count, "the dropout mask");
  math::rng_bernoulli(count, 1.f - dropout_ratio_, context().rng(), mask_.data());
  // The mask is drawn serially (one random stream); applying it is elementwise.
  const auto* mask = mask_.data();
  ParallelFor(count, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = mask[i] ? x[i] * scale : 0.f;
  });
}

void DropoutLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const float scale = PhaseScale();
  if (phase_ != TRAIN) {
    math::scale(count, scale, dy, dx);
    return;
  }
  CHECK_EQ(static_cast<int64_t>(mask_.size()), count) << "Backward without a TRAIN Forward";
  const auto* mask = mask_.data();
  ParallelFor(count, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = mask[i] ? dy[i] * scale : 0.f;
  });
}

REGISTER_LAYER_CLASS(Dropout);

}  // namespace caffe
