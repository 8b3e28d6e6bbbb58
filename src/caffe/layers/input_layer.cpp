#include "caffe/layers/input_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void InputLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const InputParameter& p = layer_param_.input_param();
  const int num_shapes = p.shape_size();
  const int num_tops = static_cast<int>(top.size());
  LAYER_REQUIRE(num_shapes == 1 || num_shapes == num_tops)
      << "input_param needs one shape for all tops or one per top (" << num_tops
      << "), found " << num_shapes;
  for (int i = 0; i < num_tops; ++i) {
    const BlobShape& shape = p.shape(num_shapes == 1 ? 0 : i);
    for (int d = 0; d < shape.dim_size(); ++d) {
      // An empty blob is never what a net definition means; it only fails later,
      // far from the typo.
      LAYER_REQUIRE(shape.dim(d) > 0)
          << "input shape for top '" << top_name(i) << "': dimension " << d
          << " must be positive, found " << shape.dim(d);
    }
    top[i]->Reshape(shape);
  }
}

REGISTER_LAYER_CLASS(Input);

}  // namespace caffe
