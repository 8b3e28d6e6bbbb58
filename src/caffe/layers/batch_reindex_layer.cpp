#include "caffe/layers/batch_reindex_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void BatchReindexLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() >= 1)
      << "data bottom '" << bottom_name(0) << "' is a scalar; it needs a first axis of items";
  LAYER_REQUIRE(bottom[1]->num_axes() == 1)
      << "index bottom '" << bottom_name(1) << "' has shape " << ShapeToString(bottom[1]->shape())
      << "; expected one axis (one index per top item)";
  // Forward would overwrite items it has yet to read.
  LAYER_REQUIRE(top[0] != bottom[0])
      << "cannot run in place: give top '" << top_name(0) << "' its own name";
  vector<int64_t> shape = bottom[0]->shape();
  shape[0] = bottom[1]->shape(0);
  top[0]->Reshape(shape);
  ResizeScratch(&source_items_, bottom[1]->count(), "the index list");
}

void BatchReindexLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t items = bottom[0]->shape(0);
  const int64_t item_size = bottom[0]->count(1);
  const int64_t picks = bottom[1]->count();
  const float* indices = bottom[1]->cpu_data();
  for (int64_t i = 0; i < picks; ++i) {
    const float value = indices[i];
    // Compared as a float first: a NaN or a huge value must not reach the cast.
    const bool in_range = value >= 0 && value < static_cast<float>(items);
    const int64_t item = in_range ? static_cast<int64_t>(value) : -1;
    LAYER_REQUIRE(in_range && item < items && static_cast<float>(item) == value)
        << "index bottom '" << bottom_name(1) << "' element " << i << " is " << value
        << "; expected an integer index in [0, " << items << ") (the items of bottom '"
        << bottom_name(0) << "')";
    source_items_[i] = item;
  }
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (int64_t i = 0; i < picks; ++i) {
    math::copy(item_size, x + source_items_[i] * item_size, y + i * item_size);
  }
}

void BatchReindexLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the index bottom '" << bottom_name(1)
      << "': it only addresses items; set propagate_down: false for it";
  if (!propagate_down[0]) return;
  const int64_t item_size = bottom[0]->count(1);
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  math::set(bottom[0]->count(), 0.f, dx);
  const int64_t picks = static_cast<int64_t>(source_items_.size());
  for (int64_t i = 0; i < picks; ++i) {
    // An item picked several times gets the sum of its copies' gradients.
    math::axpy(item_size, 1.f, dy + i * item_size, dx + source_items_[i] * item_size);
  }
}

REGISTER_LAYER_CLASS(BatchReindex);

}  // namespace caffe
