#include "caffe/filler.hpp"

#include <cmath>

#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// fan_in = inputs per output unit (all axes but the first), fan_out = the count
// divided by the channel axis: the usual convention for conv and IP weights.
float VarianceScale(const FillerParameter& param, const Blob& blob) {
  const int64_t fan_in = blob.count() / std::max<int64_t>(1, blob.shape(0));
  const int64_t fan_out =
      blob.num_axes() > 1 ? blob.count() / std::max<int64_t>(1, blob.shape(1)) : blob.count();
  switch (param.variance_norm()) {
    case FillerParameter::FAN_OUT:
      return static_cast<float>(fan_out);
    case FillerParameter::AVERAGE:
      return (fan_in + fan_out) / 2.0f;
    default:
      return static_cast<float>(fan_in);
  }
}

}  // namespace

bool IsKnownFiller(const string& type) {
  return type == "constant" || type == "uniform" || type == "gaussian" ||
         type == "positive_unitball" || type == "xavier" || type == "msra" ||
         type == "bilinear";
}

void FillBlob(const FillerParameter& param, Blob* blob, std::mt19937_64& rng) {
  const string& type = param.type();
  const int64_t count = blob->count();
  if (count == 0) return;
  float* data = blob->mutable_cpu_data();
  if (type == "constant") {
    math::set(count, param.value(), data);
  } else if (type == "uniform") {
    CAFFE_REQUIRE(param.min() <= param.max())
        << "uniform filler needs min <= max, found min " << param.min() << " and max "
        << param.max();
    math::rng_uniform(count, param.min(), param.max(), rng, data);
  } else if (type == "gaussian") {
    CAFFE_REQUIRE(param.std() > 0) << "gaussian filler needs std > 0, found " << param.std();
    math::rng_gaussian(count, param.mean(), param.std(), rng, data);
    if (param.sparse() >= 0) {
      // Keep each weight with probability sparse / fan_in, so that each output sees
      // about `sparse` non-zero inputs.
      CAFFE_REQUIRE(blob->num_axes() >= 1) << "sparse gaussian filler needs a shaped blob";
      const int64_t num_outputs = blob->shape(0);
      const float keep = std::min(1.0f, static_cast<float>(param.sparse()) /
                                            static_cast<float>(count / num_outputs));
      std::bernoulli_distribution bern(keep);
      for (int64_t i = 0; i < count; ++i) {
        if (!bern(rng)) data[i] = 0;
      }
    }
  } else if (type == "positive_unitball") {
    math::rng_uniform(count, 0, 1, rng, data);
    const int64_t num = blob->shape(0);
    const int64_t dim = count / num;
    for (int64_t i = 0; i < num; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < dim; ++j) sum += data[i * dim + j];
      for (int64_t j = 0; j < dim; ++j) data[i * dim + j] /= static_cast<float>(sum);
    }
  } else if (type == "xavier") {
    const float scale = std::sqrt(3.0f / VarianceScale(param, *blob));
    math::rng_uniform(count, -scale, scale, rng, data);
  } else if (type == "msra") {
    const float std = std::sqrt(2.0f / VarianceScale(param, *blob));
    math::rng_gaussian(count, 0, std, rng, data);
  } else if (type == "bilinear") {
    // Upsampling kernel for Deconvolution: weights of a bilinear interpolation.
    CAFFE_REQUIRE(blob->num_axes() == 4) << "bilinear filler needs a 4-d blob, found "
                                         << ShapeToString(blob->shape());
    CAFFE_REQUIRE(blob->shape(2) == blob->shape(3))
        << "bilinear filler needs a square kernel, found " << ShapeToString(blob->shape());
    const int64_t k = blob->shape(3);
    const int64_t f = (k + 1) / 2;
    const float c = (2 * f - 1 - f % 2) / (2.0f * f);
    for (int64_t i = 0; i < count; ++i) {
      const float x = static_cast<float>(i % k);
      const float y = static_cast<float>((i / k) % k);
      data[i] = (1 - std::fabs(x / f - c)) * (1 - std::fabs(y / f - c));
    }
  } else {
    ErrorBuilder() << "unknown filler type '" << type
                   << "' (known: constant, uniform, gaussian, positive_unitball, xavier, msra, "
                      "bilinear)";
  }
}

}  // namespace caffe
