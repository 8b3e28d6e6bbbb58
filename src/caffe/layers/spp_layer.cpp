#include "caffe/layers/spp_layer.hpp"

#include <climits>

#include "caffe/layer_factory.hpp"

namespace caffe {

// The pool and engine values pass to the Pooling layers inside unchanged.
static_assert(static_cast<int>(SPPParameter::MAX) == PoolingParameter::MAX &&
                  static_cast<int>(SPPParameter::AVE) == PoolingParameter::AVE &&
                  static_cast<int>(SPPParameter::STOCHASTIC) == PoolingParameter::STOCHASTIC,
              "spp_param.pool must mean what pooling_param.pool means");
static_assert(static_cast<int>(SPPParameter::DEFAULT) == PoolingParameter::DEFAULT &&
                  static_cast<int>(SPPParameter::CAFFE) == PoolingParameter::CAFFE &&
                  static_cast<int>(SPPParameter::CUDNN) == PoolingParameter::CUDNN &&
                  static_cast<int>(SPPParameter::DNNL) == PoolingParameter::DNNL,
              "spp_param.engine must mean what pooling_param.engine means");

namespace {

// A level beyond this would have 2^31 or more bins per side: more than a bottom side
// (below 2^31, as Pooling requires) can fill.
constexpr uint32_t kMaxPyramidHeight = 31;

vector<Blob*> Pointers(const vector<shared_ptr<Blob>>& blobs) {
  vector<Blob*> pointers;
  for (const auto& blob : blobs) pointers.push_back(blob.get());
  return pointers;
}

}  // namespace

void SPPLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const SPPParameter& p = layer_param_.spp_param();
  LAYER_REQUIRE(p.pyramid_height() >= 1 && p.pyramid_height() <= kMaxPyramidHeight)
      << "spp_param.pyramid_height must be between 1 and " << kMaxPyramidHeight << ", found "
      << p.pyramid_height() << (p.has_pyramid_height() ? "" : " (it is not set)");
  pyramid_height_ = static_cast<int>(p.pyramid_height());
  built_height_ = built_width_ = -1;
}

SPPLayer::LevelGeometry SPPLayer::GeometryOf(int level, int64_t size, const char* axis_name,
                                             const Blob& bottom) const {
  const int64_t bins = int64_t{1} << level;
  LevelGeometry geometry;
  geometry.kernel = (size + bins - 1) / bins;
  // The windows cover bins * kernel >= size inputs; the surplus is split between the two
  // ends as padding, the larger half in front (BVLC's choice).
  geometry.pad = (geometry.kernel * bins - size + 1) / 2;
  LAYER_REQUIRE(geometry.pad < geometry.kernel)
      << "spp_param.pyramid_height " << pyramid_height_ << " is too tall for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(bottom.shape()) << ": level " << level
      << " splits its " << axis_name << " of " << size << " into " << bins << " bins, windows of "
      << geometry.kernel << " with padding " << geometry.pad
      << ", and Pooling needs the padding below the window";
  LAYER_REQUIRE(geometry.pad == 0 || layer_param_.spp_param().pool() != SPPParameter::STOCHASTIC)
      << "STOCHASTIC pooling takes no padding, but level " << level << " splits the " << axis_name
      << " " << size << " of bottom '" << bottom_name(0) << "' into " << bins
      << " bins with padding " << geometry.pad << "; with STOCHASTIC, H and W must be "
      << "multiples of " << (int64_t{1} << (pyramid_height_ - 1));
  return geometry;
}

shared_ptr<Layer> SPPLayer::MakePiece(LayerParameter param, const string& type,
                                      const string& suffix) const {
  param.set_name(layer_param_.name() + "/" + suffix);
  param.set_type(type);
  param.set_phase(phase_);
  // Created through the registry, in this layer's mode, so that Pooling gets the engine
  // spp_param.engine (or DEFAULT's choice) names, as a Pooling layer of the net would.
  shared_ptr<Layer> piece = LayerRegistry::CreateLayer(param, context());
  piece->set_context(shared_context());  // so it runs in this layer's mode
  return piece;
}

vector<Blob*> SPPLayer::PoolingBottom(int level, const vector<Blob*>& bottom) const {
  return pyramid_height_ > 1 ? vector<Blob*>{split_tops_[level].get()} : bottom;
}

vector<Blob*> SPPLayer::PoolingTop(int level, const vector<Blob*>& top) const {
  return pyramid_height_ > 1 ? vector<Blob*>{pooled_[level].get()} : top;
}

void SPPLayer::BuildPieces(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t height = bottom[0]->shape(2), width = bottom[0]->shape(3);
  vector<LevelGeometry> rows, columns;
  for (int level = 0; level < pyramid_height_; ++level) {
    rows.push_back(GeometryOf(level, height, "height", *bottom[0]));
    columns.push_back(GeometryOf(level, width, "width", *bottom[0]));
  }
  const bool pyramid = pyramid_height_ > 1;
  split_layer_.reset();
  split_tops_.clear();
  pooling_layers_.clear();
  pooled_.clear();
  flatten_layers_.clear();
  flattened_.clear();
  concat_layer_.reset();

  if (pyramid) {
    // Each level's Pooling overwrites its bottom's diff in backward: the levels get a
    // view each, and Split sums their gradients into the bottom's.
    split_layer_ = MakePiece(LayerParameter(), "Split", "split");
    for (int level = 0; level < pyramid_height_; ++level) {
      split_tops_.push_back(std::make_shared<Blob>());
    }
    split_layer_->SetUp(bottom, Pointers(split_tops_));
  }
  const SPPParameter& spp = layer_param_.spp_param();
  for (int level = 0; level < pyramid_height_; ++level) {
    LayerParameter pooling_param;
    PoolingParameter* p = pooling_param.mutable_pooling_param();
    p->set_pool(static_cast<PoolingParameter::PoolMethod>(spp.pool()));
    p->set_engine(static_cast<PoolingParameter::Engine>(spp.engine()));
    p->set_kernel_h(static_cast<uint32_t>(rows[level].kernel));
    p->set_kernel_w(static_cast<uint32_t>(columns[level].kernel));
    p->set_stride_h(static_cast<uint32_t>(rows[level].kernel));
    p->set_stride_w(static_cast<uint32_t>(columns[level].kernel));
    p->set_pad_h(static_cast<uint32_t>(rows[level].pad));
    p->set_pad_w(static_cast<uint32_t>(columns[level].pad));
    const string level_name = std::to_string(level);
    pooling_layers_.push_back(MakePiece(pooling_param, "Pooling", "pool" + level_name));
    if (pyramid) pooled_.push_back(std::make_shared<Blob>());
    pooling_layers_[level]->SetUp(PoolingBottom(level, bottom), PoolingTop(level, top));
    if (pyramid) {
      // The default flatten_param: everything after the first axis.
      flatten_layers_.push_back(MakePiece(LayerParameter(), "Flatten", "flatten" + level_name));
      flattened_.push_back(std::make_shared<Blob>());
      flatten_layers_[level]->SetUp({pooled_[level].get()}, {flattened_[level].get()});
    }
  }
  if (pyramid) {
    // The default concat_param: along axis 1, level 0 first.
    concat_layer_ = MakePiece(LayerParameter(), "Concat", "concat");
    concat_layer_->SetUp(Pointers(flattened_), top);
  }
  built_height_ = height;
  built_width_ = width;
}

void SPPLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() == 4)
      << "bottom '" << bottom_name(0) << "' must be 4-d (N x C x H x W), found shape "
      << ShapeToString(bottom[0]->shape());
  LAYER_REQUIRE(top[0] != bottom[0])
      << "cannot run in place: give top '" << top_name(0) << "' its own name";
  const int64_t height = bottom[0]->shape(2), width = bottom[0]->shape(3);
  LAYER_REQUIRE(height >= 1 && width >= 1 && height <= INT_MAX && width <= INT_MAX)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape())
      << " needs H and W between 1 and " << INT_MAX;
  if (height != built_height_ || width != built_width_) {
    // Every level's window depends on H and W: new pieces, set up (and so reshaped).
    BuildPieces(bottom, top);
    return;
  }
  if (split_layer_) split_layer_->Reshape(bottom, Pointers(split_tops_));
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_layers_[level]->Reshape(PoolingBottom(level, bottom), PoolingTop(level, top));
    if (!flatten_layers_.empty()) {
      flatten_layers_[level]->Reshape({pooled_[level].get()}, {flattened_[level].get()});
    }
  }
  if (concat_layer_) concat_layer_->Reshape(Pointers(flattened_), top);
}

void SPPLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // Each piece's Forward runs its CPU or GPU path as the shared context's mode says.
  if (split_layer_) split_layer_->Forward(bottom, Pointers(split_tops_));
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_layers_[level]->Forward(PoolingBottom(level, bottom), PoolingTop(level, top));
    if (!flatten_layers_.empty()) {
      flatten_layers_[level]->Forward({pooled_[level].get()}, {flattened_[level].get()});
    }
  }
  if (concat_layer_) concat_layer_->Forward(Pointers(flattened_), top);
}

void SPPLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  if (concat_layer_) {
    concat_layer_->Backward(top, vector<bool>(pyramid_height_, true), Pointers(flattened_));
  }
  for (int level = 0; level < pyramid_height_; ++level) {
    if (!flatten_layers_.empty()) {
      flatten_layers_[level]->Backward({flattened_[level].get()}, {true}, {pooled_[level].get()});
    }
    pooling_layers_[level]->Backward(PoolingTop(level, top), {true}, PoolingBottom(level, bottom));
  }
  if (split_layer_) split_layer_->Backward(Pointers(split_tops_), {true}, bottom);
}

REGISTER_LAYER_CLASS(SPP);

}  // namespace caffe
