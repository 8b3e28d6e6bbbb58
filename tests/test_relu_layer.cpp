#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/relu_layer.hpp"
#include "caffe/util/math_functions.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

vector<float> ForwardValues(const std::string& param_text, const vector<float>& x) {
  Blob bottom({static_cast<int64_t>(x.size())}), top;
  std::copy(x.begin(), x.end(), bottom.mutable_cpu_data());
  shared_ptr<Layer> layer =
      LayerRegistry::CreateLayer(ParseLayer("name: 'r' type: 'ReLU' " + param_text));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  return vector<float>(top.cpu_data(), top.cpu_data() + top.count());
}

}  // namespace

TEST(ReLULayerTest, Forward) {
  EXPECT_EQ(ForwardValues("", {-2, -0.5f, 0, 0.5f, 3}), (vector<float>{0, 0, 0, 0.5f, 3}));
}

TEST(ReLULayerTest, LeakyForward) {
  const vector<float> y =
      ForwardValues("relu_param { negative_slope: 0.1 }", {-2, -0.5f, 0, 0.5f, 3});
  const vector<float> expected{-0.2f, -0.05f, 0, 0.5f, 3};
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], expected[i]);
}

TEST(ReLULayerTest, Gradient) {
  for (float slope : {0.f, 0.25f}) {
    Blob bottom({2, 3, 4}), top;
    FillUniform(&bottom, -1, 1);
    LayerParameter param = ParseLayer("name: 'r' type: 'ReLU'");
    param.mutable_relu_param()->set_negative_slope(slope);
    ReLULayer layer(param);
    // Points within a step of 0 straddle the kink, where the difference quotient
    // does not equal either one-sided slope.
    GradientChecker checker(1e-2f, 1e-3f, 1701, 0.f, 1.1e-2f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_GT(checker.checked(), 20);
  }
}

TEST(ReLULayerTest, InPlaceMatchesOutOfPlace) {
  Blob bottom({3, 4}), top, in_place;
  FillUniform(&bottom, -1, 1);
  in_place.CopyFrom(bottom, false, true);
  LayerParameter param = ParseLayer("name: 'r' type: 'ReLU' relu_param { negative_slope: 0.3 }");
  ReLULayer a(param), b(param);
  a.SetUp({&bottom}, {&top});
  b.SetUp({&in_place}, {&in_place});
  a.Forward({&bottom}, {&top});
  b.Forward({&in_place}, {&in_place});
  Blob dy({3, 4});
  FillUniform(&dy, -1, 1, 5);
  math::copy(12, dy.cpu_data(), top.mutable_cpu_diff());
  math::copy(12, dy.cpu_data(), in_place.mutable_cpu_diff());
  a.Backward({&top}, {true}, {&bottom});
  b.Backward({&in_place}, {true}, {&in_place});
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(in_place.cpu_data()[i], top.cpu_data()[i]);
    EXPECT_FLOAT_EQ(in_place.cpu_diff()[i], bottom.cpu_diff()[i]);
    const float x = bottom.cpu_data()[i];
    EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], x > 0 ? dy.cpu_data()[i] : 0.3f * dy.cpu_data()[i]);
  }
}

}  // namespace caffe
