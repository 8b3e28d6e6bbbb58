#include <gtest/gtest.h>

#include "caffe/layers/bias_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(BiasLayerTest, LearnedBiasPerChannel) {
  Blob bottom({2, 3, 2});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BiasLayer layer(ParseLayer("name: 'b' type: 'Bias'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{3}));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(layer.blobs()[0]->cpu_data()[c], 0.f);
  const float b[] = {1, -2, 0.5f};
  std::copy(b, b + 3, layer.blobs()[0]->mutable_cpu_data());
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], bottom.cpu_data()[i] + b[(i / 2) % 3]);
}

TEST(BiasLayerTest, SecondBottomCoversTrailingAxes) {
  Blob bottom({2, 3, 2}), bias({3, 2});
  FillUniform(&bottom, -1, 1);
  FillUniform(&bias, -1, 1, 4);
  Blob top;
  BiasLayer layer(ParseLayer("name: 'b' type: 'Bias'"));
  vector<Blob*> bottoms{&bottom, &bias}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(top.cpu_data()[i], bottom.cpu_data()[i] + bias.cpu_data()[i % 6]);
  }
}

TEST(BiasLayerTest, GradientLearned) {
  Blob bottom({2, 3, 2, 2});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BiasLayer layer(ParseLayer(
      "name: 'b' type: 'Bias' bias_param { axis: 1 num_axes: 2 "
      "filler { type: 'uniform' min: -1 max: 1 } }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count() + 6);
}

TEST(BiasLayerTest, GradientSecondBottom) {
  Blob bottom({2, 3, 2}), bias({2});
  FillUniform(&bottom, -1, 1);
  FillUniform(&bias, -1, 1, 8);
  Blob top;
  BiasLayer layer(ParseLayer("name: 'b' type: 'Bias' bias_param { axis: 0 }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom, &bias}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count() + bias.count());
}

TEST(BiasLayerTest, NumAxesPastTheEndIsAnError) {
  Blob bottom({2, 3});
  Blob top;
  BiasLayer layer(ParseLayer("name: 'b' type: 'Bias' bias_param { axis: 1 num_axes: 2 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'b'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("num_axes"), std::string::npos) << e.what();
  }
}

}  // namespace caffe
