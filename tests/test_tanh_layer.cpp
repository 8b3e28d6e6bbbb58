#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/tanh_layer.hpp"
#include "caffe/util/math_functions.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(TanHLayerTest, ForwardMatchesHandValues) {
  Blob bottom({6}), top;
  const float x[] = {0, 1, -2, 3.5f, -100, 100};
  std::copy(x, x + 6, bottom.mutable_cpu_data());
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer("name: 't' type: 'TanH'"));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  EXPECT_NEAR(top.cpu_data()[0], 0.0000000000f, 1e-6);
  EXPECT_NEAR(top.cpu_data()[1], 0.7615941560f, 1e-6);
  EXPECT_NEAR(top.cpu_data()[2], -0.9640275801f, 1e-6);
  EXPECT_NEAR(top.cpu_data()[3], 0.9981778976f, 1e-6);
  EXPECT_NEAR(top.cpu_data()[4], -1.0000000000f, 1e-6);
  EXPECT_NEAR(top.cpu_data()[5], 1.0000000000f, 1e-6);
}

TEST(TanHLayerTest, Gradient) {
  Blob bottom({2, 3, 2}), top;
  FillUniform(&bottom, -2, 2);
  TanHLayer layer(ParseLayer("name: 't' type: 'TanH'"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 12);
}

TEST(TanHLayerTest, InPlaceMatchesOutOfPlace) {
  Blob bottom({3, 4}), top, in_place({3, 4});
  FillUniform(&bottom, -3, 3);
  in_place.CopyFrom(bottom);
  TanHLayer a(ParseLayer("name: 't' type: 'TanH'"));
  TanHLayer b(ParseLayer("name: 't' type: 'TanH'"));
  a.SetUp({&bottom}, {&top});
  b.SetUp({&in_place}, {&in_place});
  a.Forward({&bottom}, {&top});
  b.Forward({&in_place}, {&in_place});
  Blob dy({3, 4});
  FillUniform(&dy, -1, 1, 7);
  math::copy(12, dy.cpu_data(), top.mutable_cpu_diff());
  math::copy(12, dy.cpu_data(), in_place.mutable_cpu_diff());
  a.Backward({&top}, {true}, {&bottom});
  b.Backward({&in_place}, {true}, {&in_place});
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(in_place.cpu_data()[i], top.cpu_data()[i]);
    EXPECT_FLOAT_EQ(in_place.cpu_diff()[i], bottom.cpu_diff()[i]);
  }
}

}  // namespace caffe
