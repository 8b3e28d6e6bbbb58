#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/mvn_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char* const kConfigs[] = {
    "name: 'm' type: 'MVN'",
    "name: 'm' type: 'MVN' mvn_param { normalize_variance: false }",
    "name: 'm' type: 'MVN' mvn_param { across_channels: true }",
    "name: 'm' type: 'MVN' mvn_param { across_channels: true normalize_variance: false }",
};

}  // namespace

TEST(MVNLayerTest, HandValues) {
  Blob bottom({1, 1, 4}), top;
  const float x[] = {1, 2, 3, 6};  // mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5
  std::copy(x, x + 4, bottom.mutable_cpu_data());
  MVNLayer layer(ParseLayer("name: 'm' type: 'MVN' mvn_param { eps: 0.5 }"));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  const double d = std::sqrt(3.5) + 0.5;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(top.cpu_data()[i], (x[i] - 3) / d, 1e-6);
}

TEST(MVNLayerTest, ForwardMatchesNaiveStatistics) {
  Blob bottom({2, 3, 2, 3}), top;
  FillUniform(&bottom, -2, 5);
  for (const char* proto : kConfigs) {
    MVNLayer layer(ParseLayer(proto));
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    const MVNParameter& p = layer.layer_param().mvn_param();
    const int64_t groups = p.across_channels() ? 2 : 6;
    const int64_t dim = bottom.count() / groups;
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = bottom.cpu_data() + g * dim;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < dim; ++j) mean += x[j] / double(dim);
      for (int64_t j = 0; j < dim; ++j) var += (x[j] - mean) * (x[j] - mean) / dim;
      const double scale = p.normalize_variance() ? 1 / (std::sqrt(var) + p.eps()) : 1;
      for (int64_t j = 0; j < dim; ++j) {
        EXPECT_NEAR(top.cpu_data()[g * dim + j], (x[j] - mean) * scale, 1e-5) << proto;
      }
    }
  }
}

TEST(MVNLayerTest, Gradient) {
  for (const char* proto : kConfigs) {
    Blob bottom({2, 3, 2, 2}), top;
    FillUniform(&bottom, -1, 1);
    MVNLayer layer(ParseLayer(proto));
    GradientChecker checker(1e-2f, 2e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), 24) << proto;
  }
}

TEST(MVNLayerTest, GradientWithLargeEps) {
  // A large eps makes the d/s factor of the exact gradient matter.
  Blob bottom({2, 2, 3}), top;
  FillUniform(&bottom, -1, 1);
  MVNLayer layer(ParseLayer("name: 'm' type: 'MVN' mvn_param { eps: 0.3 }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 12);
}

TEST(MVNLayerTest, InPlaceMatchesOutOfPlace) {
  for (const char* proto : kConfigs) {
    Blob input({2, 3, 4}), top_diff({2, 3, 4});
    FillUniform(&input, -1, 1);
    FillUniform(&top_diff, -1, 1, 5);
    Blob bottom({2, 3, 4}), top, shared({2, 3, 4});
    bottom.CopyFrom(input);
    shared.CopyFrom(input);
    MVNLayer a(ParseLayer(proto)), b(ParseLayer(proto));
    a.SetUp({&bottom}, {&top});
    a.Forward({&bottom}, {&top});
    std::copy_n(top_diff.cpu_data(), 24, top.mutable_cpu_diff());
    a.Backward({&top}, {true}, {&bottom});
    b.SetUp({&shared}, {&shared});
    b.Forward({&shared}, {&shared});
    std::copy_n(top_diff.cpu_data(), 24, shared.mutable_cpu_diff());
    b.Backward({&shared}, {true}, {&shared});
    for (int i = 0; i < 24; ++i) {
      EXPECT_FLOAT_EQ(shared.cpu_data()[i], top.cpu_data()[i]) << proto;
      EXPECT_NEAR(shared.cpu_diff()[i], bottom.cpu_diff()[i], 1e-6) << proto;
    }
  }
}

TEST(MVNLayerTest, ScalarBottomIsAnError) {
  Blob bottom(vector<int64_t>{}), top;
  MVNLayer layer(ParseLayer("name: 'm' type: 'MVN'"));
  EXPECT_THROW(layer.SetUp({&bottom}, {&top}), Error);
}

}  // namespace caffe
