#include "caffe/layers/flatten_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void FlattenLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(top[0] != bottom[0]) << "cannot run in place; give the top its own name";
  const FlattenParameter& p = layer_param_.flatten_param();
  const int num_axes = bottom[0]->num_axes();
  for (int axis : {p.axis(), p.end_axis()}) {
    LAYER_REQUIRE(axis >= -num_axes && axis < num_axes)
        << "flatten_param axis " << axis << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(bottom[0]->shape());
  }
  const int start = bottom[0]->CanonicalAxisIndex(p.axis());
  const int end = bottom[0]->CanonicalAxisIndex(p.end_axis());
  // end == start - 1 flattens an empty range, inserting an axis of 1 (as Caffe allows).
  LAYER_REQUIRE(end >= start - 1) << "flatten_param.end_axis (" << p.end_axis()
                                  << ") comes before axis (" << p.axis() << ")";
  const vector<int64_t>& in = bottom[0]->shape();
  vector<int64_t> shape(in.begin(), in.begin() + start);
  shape.push_back(bottom[0]->count(start, end + 1));
  shape.insert(shape.end(), in.begin() + end + 1, in.end());
  top[0]->Reshape(shape);
  top[0]->ShareData(*bottom[0]);
  top[0]->ShareDiff(*bottom[0]);
}

REGISTER_LAYER_CLASS(Flatten);

}  // namespace caffe
