#include "caffe/layers/crop_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Calls copy_row(top_offset, bottom_offset, length) for every contiguous run of the
// top: one per index over all but the last axis.
template <typename CopyRow>
void ForEachRow(const Blob& top, const Blob& bottom, const vector<int64_t>& offsets,
                CopyRow copy_row) {
  if (top.count() == 0) return;
  const int last = top.num_axes() - 1;  // Reshape guarantees at least one axis
  const int64_t length = top.shape(last);
  const int64_t rows = top.count(0, last);
  vector<int64_t> index(last, 0);  // index of the current row in top's leading axes
  for (int64_t row = 0; row < rows; ++row) {
    int64_t bottom_offset = offsets[last];
    int64_t stride = bottom.shape(last);
    for (int a = last - 1; a >= 0; --a) {
      bottom_offset += (index[a] + offsets[a]) * stride;
      stride *= bottom.shape(a);
    }
    copy_row(row * length, bottom_offset, length);
    // Advance the row index like an odometer.
    for (int a = last - 1; a >= 0 && ++index[a] == top.shape(a); --a) index[a] = 0;
  }
}

}  // namespace

void CropLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const CropParameter& p = layer_param_.crop_param();
  const Blob& input = *bottom[0];
  const Blob& reference = *bottom[1];
  LAYER_REQUIRE(input.num_axes() == reference.num_axes())
      << "bottom '" << bottom_name(0) << "' (" << ShapeToString(input.shape())
      << ") and bottom '" << bottom_name(1) << "' (" << ShapeToString(reference.shape())
      << ") must have the same number of axes";
  LAYER_REQUIRE(p.axis() >= -input.num_axes() && p.axis() < input.num_axes())
      << "crop_param.axis " << p.axis() << " is out of range for bottom '" << bottom_name(0)
      << "' of shape " << ShapeToString(input.shape());
  const int axis = input.CanonicalAxisIndex(p.axis());
  const int num_cropped = input.num_axes() - axis;
  LAYER_REQUIRE(p.offset_size() <= 1 || p.offset_size() == num_cropped)
      << "crop_param.offset must be given once or once per cropped axis (" << num_cropped
      << "), found " << p.offset_size();

  vector<int64_t> shape = input.shape();
  offsets_.assign(input.num_axes(), 0);
  for (int i = axis; i < input.num_axes(); ++i) {
    const int64_t offset =
        p.offset_size() == 0 ? 0 : p.offset(p.offset_size() == 1 ? 0 : i - axis);
    LAYER_REQUIRE(offset + reference.shape(i) <= input.shape(i))
        << "cannot crop axis " << i << " of bottom '" << bottom_name(0) << "' ("
        << ShapeToString(input.shape()) << ") to " << reference.shape(i) << " (from bottom '"
        << bottom_name(1) << "', " << ShapeToString(reference.shape()) << ") at offset "
        << offset;
    offsets_[i] = offset;
    shape[i] = reference.shape(i);
  }
  top[0]->Reshape(shape);
}

void CropLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  ForEachRow(*top[0], *bottom[0], offsets_, [&](int64_t top_offset, int64_t bottom_offset, int64_t n) {
    math::copy(n, x + bottom_offset, y + top_offset);
  });
}

void CropLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  math::set(bottom[0]->count(), 0.f, dx);
  ForEachRow(*top[0], *bottom[0], offsets_, [&](int64_t top_offset, int64_t bottom_offset, int64_t n) {
    math::copy(n, dy + top_offset, dx + bottom_offset);
  });
}

REGISTER_LAYER_CLASS(Crop);

}  // namespace caffe
