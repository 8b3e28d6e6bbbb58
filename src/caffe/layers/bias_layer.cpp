#include "caffe/layers/bias_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void BiasLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const BiasParameter& p = layer_param_.bias_param();
  if (bottom.size() > 1) {
    LAYER_REQUIRE(blobs_.empty()) << "takes its bias from bottom '" << bottom_name(1)
                                  << "', so it cannot also hold a learned bias blob";
  } else if (blobs_.empty()) {
    const int axis = bottom[0]->CanonicalAxisIndex(p.axis());
    LAYER_REQUIRE(p.num_axes() >= -1)
        << "bias_param.num_axes must be -1 (all remaining axes) or more, found " << p.num_axes();
    const int end = p.num_axes() == -1 ? bottom[0]->num_axes() : axis + p.num_axes();
    LAYER_REQUIRE(end <= bottom[0]->num_axes())
        << "bias_param axis " << axis << " with num_axes " << p.num_axes()
        << " reaches past bottom '" << bottom_name(0) << "' of shape "
        << ShapeToString(bottom[0]->shape());
    const vector<int64_t> shape(bottom[0]->shape().begin() + axis,
                                bottom[0]->shape().begin() + end);
    blobs_.push_back(std::make_shared<Blob>(shape));
    FillBlob(p.filler(), blobs_[0].get(), context().rng());  // default: constant 0
  }
  param_propagate_down_.assign(blobs_.size(), true);
}

void BiasLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& bias = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
  const string bias_name = bottom.size() > 1 ? "bottom '" + bottom_name(1) + "'" : "bias blob";
  const int axis =
      bias.num_axes() == 0 ? 0 : bottom[0]->CanonicalAxisIndex(layer_param_.bias_param().axis());
  bool fits = bottom[0]->num_axes() >= axis + bias.num_axes();
  for (int i = 0; fits && i < bias.num_axes(); ++i) fits = bottom[0]->shape(axis + i) == bias.shape(i);
  LAYER_REQUIRE(fits) << bias_name << " of shape " << ShapeToString(bias.shape())
                      << " does not match bottom '" << bottom_name(0) << "' of shape "
                      << ShapeToString(bottom[0]->shape()) << " from axis " << axis;
  outer_ = bottom[0]->count(0, axis);
  dim_ = bias.count();
  inner_ = bottom[0]->count(axis + bias.num_axes());
  top[0]->ReshapeLike(*bottom[0]);
}

void BiasLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* bias = (bottom.size() > 1 ? bottom[1] : blobs_[0].get())->cpu_data();
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t d = 0; d < dim_; ++d) {
      const int64_t base = (o * dim_ + d) * inner_;
      for (int64_t i = 0; i < inner_; ++i) y[base + i] = x[base + i] + bias[d];
    }
  }
}

void BiasLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  const float* dy = top[0]->cpu_diff();
  const bool from_bottom = bottom.size() > 1;
  if (from_bottom ? propagate_down[1] : param_propagate_down(0)) {
    // A bias bottom's diff is overwritten; a learned bias accumulates.
    float* db = from_bottom ? bottom[1]->mutable_cpu_diff() : blobs_[0]->mutable_cpu_diff();
    if (from_bottom) math::set(dim_, 0.f, db);
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t d = 0; d < dim_; ++d) {
        const float* row = dy + (o * dim_ + d) * inner_;
        float sum = 0.f;
        for (int64_t i = 0; i < inner_; ++i) sum += row[i];
        db[d] += sum;
      }
    }
  }
  if (propagate_down[0]) math::copy(bottom[0]->count(), dy, bottom[0]->mutable_cpu_diff());
}

REGISTER_LAYER_CLASS(Bias);

}  // namespace caffe
