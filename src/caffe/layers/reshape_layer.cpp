#include "caffe/layers/reshape_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void ReshapeLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(top[0] != bottom[0]) << "cannot run in place; give the top its own name";
  const BlobShape& shape = layer_param_.reshape_param().shape();
  copy_axes_.clear();
  inferred_axis_ = -1;
  constant_count_ = 1;
  for (int i = 0; i < shape.dim_size(); ++i) {
    const int64_t dim = shape.dim(i);
    if (dim == 0) {
      copy_axes_.push_back(i);
    } else if (dim == -1) {
      LAYER_REQUIRE(inferred_axis_ == -1)
          << "reshape_param.shape " << ShapeToString(ShapeFromProto(shape))
          << " has more than one -1; at most one dimension can be inferred";
      inferred_axis_ = i;
    } else {
      LAYER_REQUIRE(dim > 0) << "reshape_param.shape " << ShapeToString(ShapeFromProto(shape))
                             << " has dimension " << dim << "; use 0 (copy), -1 (infer) "
                             << "or a positive size";
      constant_count_ *= dim;
    }
  }
}

void ReshapeLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ReshapeParameter& p = layer_param_.reshape_param();
  const vector<int64_t>& in = bottom[0]->shape();
  const int in_axes = bottom[0]->num_axes();
  // A negative axis counts from the end, -1 meaning "after the last axis".
  const int start = p.axis() >= 0 ? p.axis() : in_axes + p.axis() + 1;
  LAYER_REQUIRE(start >= 0 && start <= in_axes)
      << "reshape_param.axis " << p.axis() << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(in);
  LAYER_REQUIRE(p.num_axes() >= -1)
      << "reshape_param.num_axes must be -1 (all remaining) or >= 0, found " << p.num_axes();
  const int end = p.num_axes() == -1 ? in_axes : start + p.num_axes();
  LAYER_REQUIRE(end <= in_axes) << "reshape_param axis " << p.axis() << " with num_axes "
                                << p.num_axes() << " goes past the " << in_axes
                                << " axes of bottom '" << bottom_name(0) << "'";

  const vector<int64_t> new_dims = ShapeFromProto(p.shape());
  vector<int64_t> shape(in.begin(), in.begin() + start);
  shape.insert(shape.end(), new_dims.begin(), new_dims.end());
  shape.insert(shape.end(), in.begin() + end, in.end());

  int64_t known_count = constant_count_ * bottom[0]->count(0, start) * bottom[0]->count(end);
  for (int axis : copy_axes_) {
    LAYER_REQUIRE(start + axis < in_axes)
        << "reshape_param.shape has a 0 at position " << axis
        << " but bottom '" << bottom_name(0) << "' (" << ShapeToString(in)
        << ") has no axis there to copy";
    shape[start + axis] = in[start + axis];
    known_count *= in[start + axis];
  }
  if (inferred_axis_ >= 0) {
    LAYER_REQUIRE(known_count != 0 && bottom[0]->count() % known_count == 0)
        << "cannot infer the -1 in reshape_param.shape: bottom '" << bottom_name(0) << "' has "
        << bottom[0]->count() << " elements, not a multiple of the " << known_count
        << " given by the other dimensions";
    shape[start + inferred_axis_] = bottom[0]->count() / known_count;
  }

  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  LAYER_REQUIRE(count == bottom[0]->count())
      << "new shape " << ShapeToString(shape) << " has " << count << " elements, bottom '"
      << bottom_name(0) << "' (" << ShapeToString(in) << ") has " << bottom[0]->count();
  top[0]->Reshape(shape);
  top[0]->ShareData(*bottom[0]);
  top[0]->ShareDiff(*bottom[0]);
}

REGISTER_LAYER_CLASS(Reshape);

}  // namespace caffe
