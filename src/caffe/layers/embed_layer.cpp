#include "caffe/layers/embed_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void EmbedLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const EmbedParameter& p = layer_param_.embed_param();
  LAYER_REQUIRE(p.num_output() > 0) << "embed_param.num_output must be positive";
  LAYER_REQUIRE(p.input_dim() > 0) << "embed_param.input_dim must be positive";
  num_output_ = p.num_output();
  input_dim_ = p.input_dim();
  bias_term_ = p.bias_term();
  const vector<int64_t> weight_shape{input_dim_, num_output_};
  const vector<int64_t> bias_shape{num_output_};
  if (!blobs_.empty()) {
    LAYER_REQUIRE(blobs_.size() == (bias_term_ ? 2u : 1u))
        << "expected " << (bias_term_ ? 2 : 1) << " weight blob(s), found " << blobs_.size();
    LAYER_REQUIRE(blobs_[0]->shape() == weight_shape)
        << "weight shape " << ShapeToString(blobs_[0]->shape()) << ", expected "
        << ShapeToString(weight_shape);
    LAYER_REQUIRE(!bias_term_ || blobs_[1]->shape() == bias_shape)
        << "bias shape " << ShapeToString(blobs_[1]->shape()) << ", expected "
        << ShapeToString(bias_shape);
  } else {
    blobs_.push_back(std::make_shared<Blob>(weight_shape));
    FillBlob(p.weight_filler(), blobs_[0].get(), context().rng());
    if (bias_term_) {
      blobs_.push_back(std::make_shared<Blob>(bias_shape));
      FillBlob(p.bias_filler(), blobs_[1].get(), context().rng());
    }
  }
  param_propagate_down_.assign(blobs_.size(), true);
}

void EmbedLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  vector<int64_t> top_shape = bottom[0]->shape();
  top_shape.push_back(num_output_);
  top[0]->Reshape(top_shape);
}

int64_t EmbedLayer::IndexAt(const float* indices, int64_t i) const {
  const float value = indices[i];
  const int64_t index = static_cast<int64_t>(value);
  LAYER_REQUIRE(value >= 0 && value < static_cast<float>(input_dim_) &&
                static_cast<float>(index) == value)
      << "bottom '" << bottom_name(0) << "' element " << i << " is " << value
      << "; expected an integer index in [0, " << input_dim_ << ")";
  return index;
}

void EmbedLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* indices = bottom[0]->cpu_data();
  const float* weight = blobs_[0]->cpu_data();
  const float* bias = bias_term_ ? blobs_[1]->cpu_data() : nullptr;
  float* y = top[0]->mutable_cpu_data();
  const int64_t m = bottom[0]->count();
  for (int64_t i = 0; i < m; ++i) {
    float* row = y + i * num_output_;
    math::copy(num_output_, weight + IndexAt(indices, i) * num_output_, row);
    if (bias) math::axpy(num_output_, 1.f, bias, row);
  }
}

void EmbedLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const float* indices = bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  const int64_t m = bottom[0]->count();
  if (param_propagate_down(0)) {
    float* dweight = blobs_[0]->mutable_cpu_diff();
    for (int64_t i = 0; i < m; ++i) {
      math::axpy(num_output_, 1.f, dy + i * num_output_,
                 dweight + IndexAt(indices, i) * num_output_);
    }
  }
  if (bias_term_ && param_propagate_down(1)) {
    float* dbias = blobs_[1]->mutable_cpu_diff();
    for (int64_t i = 0; i < m; ++i) math::axpy(num_output_, 1.f, dy + i * num_output_, dbias);
  }
  if (propagate_down[0]) math::set(m, 0.f, bottom[0]->mutable_cpu_diff());
}

REGISTER_LAYER_CLASS(Embed);

}  // namespace caffe
