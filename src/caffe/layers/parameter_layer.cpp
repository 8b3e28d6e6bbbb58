#include "caffe/layers/parameter_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void ParameterLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(layer_param_.parameter_param().has_shape())
      << "Parameter needs parameter_param { shape { dim ... } }";
  const BlobShape& proto = layer_param_.parameter_param().shape();
  vector<int64_t> shape(proto.dim().begin(), proto.dim().end());
  for (int64_t d : shape) LAYER_REQUIRE(d >= 0) << "parameter_param.shape has a negative dim " << d;
  if (blobs_.empty()) {
    blobs_.push_back(std::make_shared<Blob>(shape));  // zeros, as BVLC's leaves it
  } else {
    LAYER_REQUIRE(blobs_[0]->shape() == shape)
        << "the blob given has shape " << ShapeToString(blobs_[0]->shape())
        << ", parameter_param.shape says " << ShapeToString(shape);
  }
  param_propagate_down_.assign(1, true);
}

void ParameterLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  top[0]->ReshapeLike(*blobs_[0]);
  top[0]->ShareData(*blobs_[0]);
  top[0]->ShareDiff(*blobs_[0]);
}

void ParameterLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // Shared again in case the net gave the top other memory since Reshape.
  top[0]->ShareData(*blobs_[0]);
  top[0]->ShareDiff(*blobs_[0]);
}

REGISTER_LAYER_CLASS(Parameter);

}  // namespace caffe
