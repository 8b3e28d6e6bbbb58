#include <gtest/gtest.h>

#include "caffe/layers/embed_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char kEmbed[] =
    "name: 'e' type: 'Embed' embed_param { num_output: 3 input_dim: 4 "
    "weight_filler { type: 'uniform' min: -1 max: 1 } bias_filler { type: 'uniform' min: -1 max: 1 } }";

void SetIndices(Blob* blob, const vector<float>& values) {
  std::copy(values.begin(), values.end(), blob->mutable_cpu_data());
}

}  // namespace

TEST(EmbedLayerTest, ForwardLooksUpRowsAndAddsBias) {
  Blob bottom({2, 2}), top;
  SetIndices(&bottom, {3, 0, 1, 3});
  EmbedLayer layer(ParseLayer(kEmbed));
  layer.SetUp({&bottom}, {&top});
  ASSERT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{4, 3}));
  ASSERT_EQ(layer.blobs()[1]->shape(), vector<int64_t>{3});
  layer.Forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 2, 3}));
  const float* w = layer.blobs()[0]->cpu_data();
  const float* b = layer.blobs()[1]->cpu_data();
  const int rows[] = {3, 0, 1, 3};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_FLOAT_EQ(top.cpu_data()[i * 3 + j], w[rows[i] * 3 + j] + b[j]);
}

TEST(EmbedLayerTest, NoBias) {
  Blob bottom({3}), top;
  SetIndices(&bottom, {2, 2, 0});
  LayerParameter param = ParseLayer(kEmbed);
  param.mutable_embed_param()->set_bias_term(false);
  EmbedLayer layer(param);
  layer.SetUp({&bottom}, {&top});
  ASSERT_EQ(layer.blobs().size(), 1u);
  layer.Forward({&bottom}, {&top});
  const float* w = layer.blobs()[0]->cpu_data();
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(top.cpu_data()[j], w[6 + j]);
    EXPECT_EQ(top.cpu_data()[6 + j], w[j]);
  }
}

TEST(EmbedLayerTest, GradientOfWeightsWithRepeatedIndices) {
  Blob bottom({2, 3}), top;
  SetIndices(&bottom, {1, 3, 1, 0, 3, 3});
  EmbedLayer layer(ParseLayer(kEmbed));
  GradientChecker checker(1e-2f, 1e-3f);
  // check_bottom 1 names no bottom: the indices themselves are not differentiable.
  checker.CheckGradient(&layer, {&bottom}, {&top}, 1);
  EXPECT_EQ(checker.checked(), 12 + 3);
}

TEST(EmbedLayerTest, WeightGradientsAccumulateAndIndicesGetZero) {
  Blob bottom({2}), top;
  SetIndices(&bottom, {2, 2});
  EmbedLayer layer(ParseLayer(kEmbed));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
  std::fill_n(bottom.mutable_cpu_diff(), 2, 9.f);
  layer.Backward({&top}, {true}, {&bottom});
  layer.Backward({&top}, {true}, {&bottom});
  const float* dw = layer.blobs()[0]->cpu_diff();
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(dw[r * 3 + j], r == 2 ? 4.f : 0.f);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(layer.blobs()[1]->cpu_diff()[j], 4.f);
  EXPECT_EQ(bottom.cpu_diff()[0], 0.f);
  EXPECT_FALSE(layer.AllowForceBackward(0));
}

TEST(EmbedLayerTest, BadIndexIsAnError) {
  for (float bad : {4.f, -1.f, 1.5f}) {
    Blob bottom({3}), top;
    SetIndices(&bottom, {0, bad, 1});
    EmbedLayer layer(ParseLayer(kEmbed));
    layer.SetUp({&bottom}, {&top});
    try {
      layer.Forward({&bottom}, {&top});
      ADD_FAILURE() << "expected an error for index " << bad;
    } catch (const Error& e) {
      const string what = e.what();
      EXPECT_NE(what.find("layer 'e'"), string::npos) << what;
      EXPECT_NE(what.find("element 1"), string::npos) << what;
      EXPECT_NE(what.find("[0, 4)"), string::npos) << what;
    }
  }
}

TEST(EmbedLayerTest, MissingSizesAreErrors) {
  Blob bottom({3}), top;
  EmbedLayer no_output(ParseLayer("name: 'e' type: 'Embed' embed_param { input_dim: 4 }"));
  EXPECT_THROW(no_output.SetUp({&bottom}, {&top}), Error);
  EmbedLayer no_input(ParseLayer("name: 'e' type: 'Embed' embed_param { num_output: 4 }"));
  EXPECT_THROW(no_input.SetUp({&bottom}, {&top}), Error);
}

}  // namespace caffe
