#include "caffe/layers/prelu_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"

namespace caffe {

void PReLULayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const PReLUParameter& p = layer_param_.prelu_param();
  LAYER_REQUIRE(bottom[0]->num_axes() >= 2)
      << "bottom '" << bottom_name(0) << "' must have a channel axis (N x C x ...), found shape "
      << ShapeToString(bottom[0]->shape());
  channel_shared_ = p.channel_shared();
  const int64_t channels = bottom[0]->shape(1);
  const int64_t num_slopes = channel_shared_ ? 1 : channels;
  if (!blobs_.empty()) {
    LAYER_REQUIRE(blobs_.size() == 1 && blobs_[0]->count() == num_slopes)
        << "expected one slope blob of " << num_slopes << " value(s), found " << blobs_.size()
        << " blob(s)" << (blobs_.empty() ? "" : " of shape " + ShapeToString(blobs_[0]->shape()));
  } else {
    blobs_.push_back(std::make_shared<Blob>(channel_shared_ ? vector<int64_t>{}
                                                            : vector<int64_t>{channels}));
    FillerParameter filler;
    if (p.has_filler()) {
      filler = p.filler();
    } else {
      filler.set_type("constant");
      filler.set_value(0.25f);
    }
    FillBlob(filler, blobs_[0].get(), context().rng());
  }
  param_propagate_down_.assign(1, true);
}

void PReLULayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() >= 2)
      << "bottom '" << bottom_name(0) << "' must have a channel axis (N x C x ...), found shape "
      << ShapeToString(bottom[0]->shape());
  LAYER_REQUIRE(channel_shared_ || bottom[0]->shape(1) == blobs_[0]->count())
      << "bottom '" << bottom_name(0) << "' has " << bottom[0]->shape(1)
      << " channels, the slopes expect " << blobs_[0]->count();
  top[0]->ReshapeLike(*bottom[0]);
}

void PReLULayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  if (bottom[0] == top[0]) {
    bottom_copy_.CopyFrom(*bottom[0], false, true);
    x = bottom_copy_.cpu_data();
  }
  float* y = top[0]->mutable_cpu_data();
  const float* slope = blobs_[0]->cpu_data();
  const int64_t num = bottom[0]->shape(0);
  const int64_t channels = bottom[0]->shape(1);
  const int64_t inner = bottom[0]->count(2);
  for (int64_t n = 0; n < num; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const float a = slope[channel_shared_ ? 0 : c];
      const int64_t base = (n * channels + c) * inner;
      for (int64_t i = base; i < base + inner; ++i) y[i] = x[i] > 0 ? x[i] : a * x[i];
    }
  }
}

void PReLULayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const float* x = bottom[0] == top[0] ? bottom_copy_.cpu_data() : bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  const float* slope = blobs_[0]->cpu_data();
  const int64_t num = bottom[0]->shape(0);
  const int64_t channels = bottom[0]->shape(1);
  const int64_t inner = bottom[0]->count(2);
  // The slope gradient reads dy, so it must come before dx overwrites it in place.
  if (param_propagate_down(0)) {
    float* dslope = blobs_[0]->mutable_cpu_diff();
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < num; ++n) {
        const int64_t base = (n * channels + c) * inner;
        for (int64_t i = base; i < base + inner; ++i) {
          if (x[i] <= 0) sum += double(dy[i]) * x[i];
        }
      }
      dslope[channel_shared_ ? 0 : c] += static_cast<float>(sum);
    }
  }
  if (propagate_down[0]) {
    float* dx = bottom[0]->mutable_cpu_diff();
    for (int64_t n = 0; n < num; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const float a = slope[channel_shared_ ? 0 : c];
        const int64_t base = (n * channels + c) * inner;
        for (int64_t i = base; i < base + inner; ++i) dx[i] = x[i] > 0 ? dy[i] : a * dy[i];
      }
    }
  }
}

REGISTER_LAYER_CLASS(PReLU);

}  // namespace caffe
