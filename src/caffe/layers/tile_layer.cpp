#include "caffe/layers/tile_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void TileLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const TileParameter& p = layer_param_.tile_param();
  LAYER_REQUIRE(p.has_tiles() && p.tiles() > 0)
      << "tile_param.tiles must be given and positive, found "
      << (p.has_tiles() ? std::to_string(p.tiles()) : string("none"));
  const int num_axes = bottom[0]->num_axes();
  LAYER_REQUIRE(p.axis() >= -num_axes && p.axis() < num_axes)
      << "tile_param.axis " << p.axis() << " is out of range for bottom '" << bottom_name(0)
      << "' of shape " << ShapeToString(bottom[0]->shape());
  const int axis = bottom[0]->CanonicalAxisIndex(p.axis());
  tiles_ = p.tiles();
  outer_ = bottom[0]->count(0, axis);
  inner_ = bottom[0]->count(axis);
  vector<int64_t> top_shape = bottom[0]->shape();
  top_shape[axis] *= tiles_;
  top[0]->Reshape(top_shape);
}

void TileLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (int64_t i = 0; i < outer_; ++i) {
    for (int64_t t = 0; t < tiles_; ++t) {
      math::copy(inner_, x + i * inner_, y + (i * tiles_ + t) * inner_);
    }
  }
}

void TileLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  // Each input element fed `tiles_` outputs; its gradient is their sum.
  for (int64_t i = 0; i < outer_; ++i) {
    float* block = dx + i * inner_;
    math::copy(inner_, dy + i * tiles_ * inner_, block);
    for (int64_t t = 1; t < tiles_; ++t) math::axpy(inner_, 1.f, dy + (i * tiles_ + t) * inner_, block);
  }
}

REGISTER_LAYER_CLASS(Tile);

}  // namespace caffe
