#include "caffe/layers/concat_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void ConcatLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ConcatParameter& p = layer_param_.concat_param();
  LAYER_REQUIRE(!(p.has_axis() && p.has_concat_dim()))
      << "set either concat_param.axis or the legacy concat_dim, not both";
}

void ConcatLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ConcatParameter& p = layer_param_.concat_param();
  const Blob& first = *bottom[0];
  if (p.has_concat_dim()) {
    // Unsigned compare: a value past INT_MAX must not turn into a negative axis.
    LAYER_REQUIRE(p.concat_dim() < static_cast<uint32_t>(first.num_axes()))
        << "concat_dim " << p.concat_dim() << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(first.shape());
    axis_ = static_cast<int>(p.concat_dim());
  } else {
    LAYER_REQUIRE(p.axis() >= -first.num_axes() && p.axis() < first.num_axes())
        << "axis " << p.axis() << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(first.shape());
    axis_ = first.CanonicalAxisIndex(p.axis());
  }
  vector<int64_t> top_shape = first.shape();
  for (size_t i = 1; i < bottom.size(); ++i) {
    const Blob& other = *bottom[i];
    bool fits = other.num_axes() == first.num_axes();
    for (int a = 0; fits && a < first.num_axes(); ++a) fits = a == axis_ || other.shape(a) == first.shape(a);
    LAYER_REQUIRE(fits) << "bottoms must agree on every axis but " << axis_ << ": bottom '"
                        << bottom_name(0) << "' is " << ShapeToString(first.shape())
                        << " but bottom '" << bottom_name(int(i)) << "' is "
                        << ShapeToString(other.shape());
    top_shape[axis_] += other.shape(axis_);
  }
  top[0]->Reshape(top_shape);
  outer_ = first.count(0, axis_);
  inner_ = first.count(axis_ + 1);
  if (bottom.size() == 1) {
    top[0]->ShareData(*bottom[0]);
    top[0]->ShareDiff(*bottom[0]);
  }
}

void ConcatLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (bottom.size() == 1) return;
  float* y = top[0]->mutable_cpu_data();
  const int64_t top_axis = top[0]->shape(axis_);
  int64_t offset = 0;  // along axis_
  for (Blob* blob : bottom) {
    const int64_t axis_dim = blob->shape(axis_);
    const int64_t chunk = axis_dim * inner_;
    const float* x = blob->cpu_data();
    for (int64_t o = 0; o < outer_; ++o) {
      math::copy(chunk, x + o * chunk, y + (o * top_axis + offset) * inner_);
    }
    offset += axis_dim;
  }
}

void ConcatLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (bottom.size() == 1) return;
  const float* dy = top[0]->cpu_diff();
  const int64_t top_axis = top[0]->shape(axis_);
  int64_t offset = 0;
  for (size_t i = 0; i < bottom.size(); ++i) {
    const int64_t axis_dim = bottom[i]->shape(axis_);
    if (propagate_down[i]) {
      const int64_t chunk = axis_dim * inner_;
      float* dx = bottom[i]->mutable_cpu_diff();
      for (int64_t o = 0; o < outer_; ++o) {
        math::copy(chunk, dy + (o * top_axis + offset) * inner_, dx + o * chunk);
      }
    }
    offset += axis_dim;
  }
}

REGISTER_LAYER_CLASS(Concat);

}  // namespace caffe
