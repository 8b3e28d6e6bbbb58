#include <gtest/gtest.h>

#include "caffe/layers/inner_product_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(InnerProductLayerTest, ForwardMatchesHandComputation) {
  Blob bottom({2, 3});
  const float x[] = {1, 2, 3, -1, 0, 2};
  std::copy(x, x + 6, bottom.mutable_cpu_data());
  Blob top;
  LayerParameter param = ParseLayer(
      "name: 'ip' type: 'InnerProduct' inner_product_param { num_output: 2 "
      "weight_filler { type: 'constant' value: 0 } bias_filler { type: 'constant' value: 0 } }");
  InnerProductLayer layer(param);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  const float w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f};  // 2 x 3
  std::copy(w, w + 6, layer.blobs()[0]->mutable_cpu_data());
  layer.blobs()[1]->mutable_cpu_data()[0] = 10;
  layer.blobs()[1]->mutable_cpu_data()[1] = -1;
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(top.cpu_data()[0], 1 - 3 + 10);
  EXPECT_FLOAT_EQ(top.cpu_data()[1], 3 - 1);
  EXPECT_FLOAT_EQ(top.cpu_data()[2], -1 - 2 + 10);
  EXPECT_FLOAT_EQ(top.cpu_data()[3], 0.5f - 1);
}

TEST(InnerProductLayerTest, TransposeGivesSameResultWithTransposedWeights) {
  Blob bottom({2, 3, 2});
  FillUniform(&bottom, -1, 1);
  Blob top_a, top_b;
  LayerParameter pa = ParseLayer(
      "name: 'a' type: 'InnerProduct' inner_product_param { num_output: 4 "
      "weight_filler { type: 'gaussian' std: 1 } bias_filler { type: 'gaussian' std: 1 } }");
  LayerParameter pb = pa;
  pb.mutable_inner_product_param()->set_transpose(true);
  InnerProductLayer a(pa), b(pb);
  vector<Blob*> bottoms{&bottom};
  vector<Blob*> ta{&top_a}, tb{&top_b};
  a.SetUp(bottoms, ta);
  b.SetUp(bottoms, tb);
  // b's weights are a's transposed (K x N).
  for (int n = 0; n < 4; ++n)
    for (int k = 0; k < 6; ++k)
      b.blobs()[0]->mutable_cpu_data()[k * 4 + n] = a.blobs()[0]->cpu_data()[n * 6 + k];
  b.blobs()[1]->CopyFrom(*a.blobs()[1]);
  a.Forward(bottoms, ta);
  b.Forward(bottoms, tb);
  for (int i = 0; i < top_a.count(); ++i) EXPECT_NEAR(top_a.cpu_data()[i], top_b.cpu_data()[i], 1e-5);
}

TEST(InnerProductLayerTest, Gradient) {
  for (bool transpose : {false, true}) {
    Blob bottom({2, 3, 2, 2});
    FillUniform(&bottom, -1, 1);
    Blob top;
    LayerParameter param = ParseLayer(
        "name: 'ip' type: 'InnerProduct' inner_product_param { num_output: 5 "
        "weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'uniform' min: -1 max: 1 } }");
    param.mutable_inner_product_param()->set_transpose(transpose);
    InnerProductLayer layer(param);
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), 24 + 60 + 5);
  }
}

TEST(InnerProductLayerTest, WrongInputSizeIsAnError) {
  Blob bottom({2, 3});
  Blob top;
  LayerParameter param = ParseLayer(
      "name: 'ip' type: 'InnerProduct' inner_product_param { num_output: 2 }");
  InnerProductLayer layer(param);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  bottom.Reshape({2, 4});
  try {
    layer.Reshape(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'ip'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expect 3"), std::string::npos) << e.what();
  }
}

}  // namespace caffe
