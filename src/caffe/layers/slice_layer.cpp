#include "caffe/layers/slice_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void SliceLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const SliceParameter& p = layer_param_.slice_param();
  LAYER_REQUIRE(!(p.has_axis() && p.has_slice_dim()))
      << "set either slice_param.axis or the legacy slice_dim, not both";
  LAYER_REQUIRE(p.slice_point_size() == 0 ||
                p.slice_point_size() == static_cast<int>(top.size()) - 1)
      << "slice_param.slice_point must be given once fewer than the tops (" << top.size()
      << "), found " << p.slice_point_size();
}

void SliceLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const SliceParameter& p = layer_param_.slice_param();
  const Blob& input = *bottom[0];
  if (p.has_slice_dim()) {
    // Unsigned compare: a value past INT_MAX must not turn into a negative axis.
    LAYER_REQUIRE(p.slice_dim() < static_cast<uint32_t>(input.num_axes()))
        << "slice_dim " << p.slice_dim() << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(input.shape());
    axis_ = static_cast<int>(p.slice_dim());
  } else {
    LAYER_REQUIRE(p.axis() >= -input.num_axes() && p.axis() < input.num_axes())
        << "axis " << p.axis() << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(input.shape());
    axis_ = input.CanonicalAxisIndex(p.axis());
  }
  const int64_t axis_dim = input.shape(axis_);
  const int64_t num_tops = static_cast<int64_t>(top.size());
  vector<int64_t> sizes;
  if (p.slice_point_size() > 0) {
    int64_t previous = 0;
    for (uint32_t point : p.slice_point()) {
      LAYER_REQUIRE(point > previous && point <= axis_dim)
          << "slice_point values must increase strictly within (0, " << axis_dim
          << "] (axis " << axis_ << " of bottom '" << bottom_name(0) << "', shape "
          << ShapeToString(input.shape()) << "), found " << point << " after " << previous;
      sizes.push_back(point - previous);
      previous = point;
    }
    sizes.push_back(axis_dim - previous);
  } else {
    LAYER_REQUIRE(axis_dim % num_tops == 0)
        << "cannot split axis " << axis_ << " of bottom '" << bottom_name(0) << "' (shape "
        << ShapeToString(input.shape()) << ") into " << num_tops << " equal parts";
    sizes.assign(num_tops, axis_dim / num_tops);
  }
  vector<int64_t> shape = input.shape();
  for (int64_t t = 0; t < num_tops; ++t) {
    shape[axis_] = sizes[t];
    top[t]->Reshape(shape);
  }
  outer_ = input.count(0, axis_);
  inner_ = input.count(axis_ + 1);
  if (top.size() == 1) {
    top[0]->ShareData(*bottom[0]);
    top[0]->ShareDiff(*bottom[0]);
  }
}

void SliceLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (top.size() == 1) return;
  const float* x = bottom[0]->cpu_data();
  const int64_t bottom_axis = bottom[0]->shape(axis_);
  int64_t offset = 0;  // along axis_
  for (Blob* blob : top) {
    const int64_t axis_dim = blob->shape(axis_);
    const int64_t chunk = axis_dim * inner_;
    float* y = blob->mutable_cpu_data();
    for (int64_t o = 0; o < outer_; ++o) {
      math::copy(chunk, x + (o * bottom_axis + offset) * inner_, y + o * chunk);
    }
    offset += axis_dim;
  }
}

void SliceLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (top.size() == 1 || !propagate_down[0]) return;
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t bottom_axis = bottom[0]->shape(axis_);
  int64_t offset = 0;
  for (Blob* blob : top) {
    const int64_t axis_dim = blob->shape(axis_);
    const int64_t chunk = axis_dim * inner_;
    const float* dy = blob->cpu_diff();
    for (int64_t o = 0; o < outer_; ++o) {
      math::copy(chunk, dy + o * chunk, dx + (o * bottom_axis + offset) * inner_);
    }
    offset += axis_dim;
  }
}

REGISTER_LAYER_CLASS(Slice);

}  // namespace caffe
