#include "caffe/layers/filter_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void FilterLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(top.size() == bottom.size() - 1)
      << "expected one top per data bottom (" << bottom.size() - 1
      << ": every bottom but the last, the selector), found " << top.size();
}

void FilterLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int selector_index = static_cast<int>(bottom.size()) - 1;
  const Blob& selector = *bottom[selector_index];
  LAYER_REQUIRE(selector.num_axes() >= 1)
      << "the selector bottom '" << bottom_name(selector_index)
      << "' is a scalar; expected one value per item (shape N or N x 1 x ...)";
  for (int axis = 1; axis < selector.num_axes(); ++axis) {
    LAYER_REQUIRE(selector.shape(axis) == 1)
        << "the selector bottom '" << bottom_name(selector_index) << "' has shape "
        << ShapeToString(selector.shape())
        << "; expected one value per item (shape N or N x 1 x ...)";
  }
  const int64_t items = selector.shape(0);
  for (int i = 0; i < selector_index; ++i) {
    LAYER_REQUIRE(bottom[i]->num_axes() >= 1 && bottom[i]->shape(0) == items)
        << "bottom '" << bottom_name(i) << "' has shape " << ShapeToString(bottom[i]->shape())
        << ", but the selector bottom '" << bottom_name(selector_index) << "' has " << items
        << " items: every bottom needs that many along its first axis";
    // Forward would overwrite items it has yet to read.
    LAYER_REQUIRE(top[i] != bottom[i])
        << "cannot run in place: give top '" << top_name(i) << "' its own name";
  }

  kept_items_.clear();
  const float* choice = selector.cpu_data();
  for (int64_t item = 0; item < items; ++item) {
    if (choice[item] != 0.f) kept_items_.push_back(item);
  }
  const int64_t kept = first_reshape_ ? items : static_cast<int64_t>(kept_items_.size());
  first_reshape_ = false;
  for (int i = 0; i < selector_index; ++i) {
    vector<int64_t> shape = bottom[i]->shape();
    shape[0] = kept;
    top[i]->Reshape(shape);
  }
}

void FilterLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 0; i + 1 < bottom.size(); ++i) {
    const int64_t item_size = bottom[i]->count(1);
    const float* x = bottom[i]->cpu_data();
    float* y = top[i]->mutable_cpu_data();
    const int64_t kept = static_cast<int64_t>(kept_items_.size());
    for (int64_t k = 0; k < kept; ++k) {
      math::copy(item_size, x + kept_items_[k] * item_size, y + k * item_size);
    }
  }
}

void FilterLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  const int selector_index = static_cast<int>(bottom.size()) - 1;
  LAYER_REQUIRE(!propagate_down[selector_index])
      << "cannot backpropagate to the selector bottom '" << bottom_name(selector_index)
      << "': it only chooses items; set propagate_down: false for it";
  for (int i = 0; i < selector_index; ++i) {
    if (!propagate_down[i]) continue;
    const int64_t item_size = bottom[i]->count(1);
    const float* dy = top[i]->cpu_diff();
    float* dx = bottom[i]->mutable_cpu_diff();
    // The items filtered out did not reach the top: their gradient is 0.
    math::set(bottom[i]->count(), 0.f, dx);
    const int64_t kept = static_cast<int64_t>(kept_items_.size());
    for (int64_t k = 0; k < kept; ++k) {
      math::copy(item_size, dy + k * item_size, dx + kept_items_[k] * item_size);
    }
  }
}

REGISTER_LAYER_CLASS(Filter);

}  // namespace caffe
