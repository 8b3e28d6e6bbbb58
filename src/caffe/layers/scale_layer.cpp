#include "caffe/layers/scale_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/util/channel_tiles.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/plane_sums.hpp"

namespace caffe {

void ScaleLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ScaleParameter& p = layer_param_.scale_param();
  bias_term_ = p.bias_term();
  const size_t learned_scales = bottom.size() > 1 ? 0 : 1;
  const size_t expected_blobs = learned_scales + (bias_term_ ? 1 : 0);
  bias_param_id_ = bias_term_ ? static_cast<int>(learned_scales) : -1;
  if (!blobs_.empty()) {
    LAYER_REQUIRE(blobs_.size() == expected_blobs)
        << "expected " << expected_blobs << " blob(s) ("
        << (learned_scales ? "scale" : "") << (learned_scales && bias_term_ ? " and " : "")
        << (bias_term_ ? "bias" : "") << "), found " << blobs_.size();
    param_propagate_down_.assign(blobs_.size(), true);
    return;
  }
  if (learned_scales) {
    const int axis = bottom[0]->CanonicalAxisIndex(p.axis());
    LAYER_REQUIRE(p.num_axes() >= -1)
        << "scale_param.num_axes must be -1 (all remaining axes) or more, found "
        << p.num_axes();
    const int end = p.num_axes() == -1 ? bottom[0]->num_axes() : axis + p.num_axes();
    LAYER_REQUIRE(end <= bottom[0]->num_axes())
        << "scale_param axis " << axis << " with num_axes " << p.num_axes()
        << " reaches past bottom '" << bottom_name(0) << "' of shape "
        << ShapeToString(bottom[0]->shape());
    const vector<int64_t> shape(bottom[0]->shape().begin() + axis,
                                bottom[0]->shape().begin() + end);
    blobs_.push_back(std::make_shared<Blob>(shape));
    FillerParameter filler = p.filler();
    if (!p.has_filler()) filler.set_value(1.f);  // identity until learned
    FillBlob(filler, blobs_[0].get(), context().rng());
  }
  if (bias_term_) {
    // The bias covers exactly the axes the scale covers.
    blobs_.push_back(std::make_shared<Blob>(scale_blob(bottom)->shape()));
    FillBlob(p.bias_filler(), blobs_.back().get(), context().rng());  // default: constant 0
  }
  param_propagate_down_.assign(blobs_.size(), true);
}

void ScaleLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& scale = *scale_blob(bottom);
  const string scale_name = bottom.size() > 1 ? "bottom '" + bottom_name(1) + "'" : "scale blob";
  const int axis = scale.num_axes() == 0
                       ? 0
                       : bottom[0]->CanonicalAxisIndex(layer_param_.scale_param().axis());
  bool fits = bottom[0]->num_axes() >= axis + scale.num_axes();
  for (int i = 0; fits && i < scale.num_axes(); ++i) fits = bottom[0]->shape(axis + i) == scale.shape(i);
  LAYER_REQUIRE(fits) << scale_name << " of shape " << ShapeToString(scale.shape())
                      << " does not match bottom '" << bottom_name(0) << "' of shape "
                      << ShapeToString(bottom[0]->shape()) << " from axis " << axis;
  if (bias_term_) {
    LAYER_REQUIRE(blobs_[bias_param_id_]->count() == scale.count())
        << "bias blob of shape " << ShapeToString(blobs_[bias_param_id_]->shape())
        << " does not match the scale's shape " << ShapeToString(scale.shape());
  }
  axis_ = axis;
  outer_ = bottom[0]->count(0, axis);
  dim_ = scale.count();
  inner_ = bottom[0]->count(axis + scale.num_axes());
  top[0]->ReshapeLike(*bottom[0]);
  if (bottom[0] == top[0]) saved_input_.ReshapeLike(*bottom[0]);
}

bool ScaleLayer::FoldChannelScaleInto(Layer* producer) {
  if (layer_param_.bottom_size() != 1 || axis_ != 1 || blobs_[0]->num_axes() != 1) return false;
  if (!producer->AcceptChannelScaleFold(blobs_[0].get(),
                                        bias_term_ ? blobs_[bias_param_id_].get() : nullptr)) {
    return false;
  }
  fold_producer_ = producer;
  return true;
}

void ScaleLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // In place, the input is needed for the scale gradient after it is overwritten. If
  // the layer that wrote it keeps a copy (BatchNorm's normalized output), that copy
  // serves, and is read instead of the bottom (a folded producer leaves the bottom
  // unwritten); else it is saved here, plane by plane in the same pass (each plane is
  // read before it is overwritten).
  const bool in_place = bottom[0] == top[0];
  borrowed_input_ = in_place && input_producer_ ? input_producer_->KeptTopValues() : nullptr;
  // A folded producer that keeps x has written y already (FoldChannelScaleInto).
  if (fold_producer_ && borrowed_input_) return;
  const float* x = borrowed_input_ ? borrowed_input_ : bottom[0]->cpu_data();
  float* saved = in_place && !borrowed_input_ ? saved_input_.mutable_cpu_data() : nullptr;
  const float* scale = scale_blob(bottom)->cpu_data();
  const float* bias = bias_term_ ? blobs_[bias_param_id_]->cpu_data() : nullptr;
  float* y = top[0]->mutable_cpu_data();
  // The layout plan gives a blocked blob only to a per-channel Scale (channel_layout_role).
  const int block = bottom[0]->channel_block();
  const int64_t inner = inner_;
  ForEachChannelTile(outer_, dim_, inner_, block, [=](int64_t base, int64_t c0, auto width) {
    constexpr int kWidth = decltype(width)::value;
    const float* s = scale + c0;
    float b[kWidth];
    for (int j = 0; j < kWidth; ++j) b[j] = bias ? bias[c0 + j] : 0.f;
    const int64_t n = inner * kWidth;
    if (saved) std::copy(x + base, x + base + n, saved + base);
    for (int64_t i = 0; i < n; i += kWidth) {
      for (int j = 0; j < kWidth; ++j) y[base + i + j] = x[base + i + j] * s[j] + b[j];
    }
  });
}

void ScaleLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const float* dy = top[0]->cpu_diff();
  const bool scale_from_bottom = bottom.size() > 1;
  const bool scale_grad = scale_from_bottom ? propagate_down[1] : param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(bias_param_id_);
  const float* x = nullptr;
  float* ds = nullptr;
  float* db = bias_grad ? blobs_[bias_param_id_]->mutable_cpu_diff() : nullptr;
  if (scale_grad) {
    x = bottom[0] != top[0] ? bottom[0]->cpu_data()
        : borrowed_input_   ? borrowed_input_
                            : saved_input_.cpu_data();
    // A scale bottom's diff is overwritten; learned blobs accumulate.
    ds = scale_from_bottom ? bottom[1]->mutable_cpu_diff() : blobs_[0]->mutable_cpu_diff();
    if (scale_from_bottom) math::set(dim_, 0.f, ds);
  }
  // Folded (FoldChannelScaleInto): the producer scales the input gradient in its own
  // pass, from the sums of dy and dy * x computed here for both.
  const bool fold = fold_producer_ && propagate_down[0] && borrowed_input_ && !scale_from_bottom;
  if (fold) x = borrowed_input_;
  float* dx = propagate_down[0] && !fold ? bottom[0]->mutable_cpu_diff() : nullptr;  // may alias dy
  const float* scale = dx || fold ? scale_blob(bottom)->cpu_data() : nullptr;
  const int64_t inner = inner_;
  const int block = bottom[0]->channel_block();
  // Parameter gradients first: in place, dx overwrites dy. The sums' order depends on
  // the shape alone, not on the thread count or the layout.
  if (ds || db || fold) {
    const vector<double> sums =
        ChannelSumsAndDots(outer_, dim_, inner_, block, dy, ds || fold ? x : nullptr);
    for (int64_t d = 0; d < dim_; ++d) {
      if (ds) ds[d] += static_cast<float>(sums[2 * d + 1]);
      if (db) db[d] += static_cast<float>(sums[2 * d]);
    }
    if (fold) fold_producer_->ReceiveChannelScaleFold(scale, sums);
  }
  // dx with threads splitting the tiles into contiguous ranges (split by entry, two
  // threads writing interleaved blocks ran slower than one).
  if (dx) {
    ForEachChannelTile(outer_, dim_, inner_, block, [=](int64_t base, int64_t c0, auto width) {
      constexpr int kWidth = decltype(width)::value;
      const float* s = scale + c0;
      const int64_t n = inner * kWidth;
      for (int64_t i = 0; i < n; i += kWidth) {
        for (int j = 0; j < kWidth; ++j) dx[base + i + j] = dy[base + i + j] * s[j];
      }
    });
  }
}

Layer::ChannelLayoutRole ScaleLayer::channel_layout_role() const {
  // Per-channel factors from the layer's own blob: the tiles' constants.
  const bool per_channel = layer_param_.bottom_size() == 1 && axis_ == 1 &&
                           !blobs_.empty() && blobs_[0]->num_axes() == 1;
  return per_channel ? ChannelLayoutRole::kFollowsItsBlobs : ChannelLayoutRole::kPlainOnly;
}

REGISTER_LAYER_CLASS(Scale);

}  // namespace caffe
