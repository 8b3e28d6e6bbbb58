#include <gtest/gtest.h>

#include <cstring>

#include "caffe/layers/scale_layer.hpp"
#include "caffe/net.hpp"
#include "caffe/util/num_threads.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(ScaleLayerTest, LearnedScaleAndBiasPerChannel) {
  Blob bottom({2, 3, 2, 2});
  FillUniform(&bottom, -1, 1);
  Blob top;
  ScaleLayer layer(ParseLayer("name: 'sc' type: 'Scale' scale_param { bias_term: true }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.blobs().size(), 2u);
  ASSERT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{3}));
  ASSERT_EQ(layer.blobs()[1]->shape(), (vector<int64_t>{3}));
  // Default fillers: scale 1, bias 0.
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(layer.blobs()[0]->cpu_data()[c], 1.f);
    EXPECT_EQ(layer.blobs()[1]->cpu_data()[c], 0.f);
  }
  const float s[] = {2, -1, 0.5f}, b[] = {0, 3, -2};
  std::copy(s, s + 3, layer.blobs()[0]->mutable_cpu_data());
  std::copy(b, b + 3, layer.blobs()[1]->mutable_cpu_data());
  layer.Forward(bottoms, tops);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 2; ++w)
          EXPECT_FLOAT_EQ(top.data_at(n, c, h, w), bottom.data_at(n, c, h, w) * s[c] + b[c]);
}

TEST(ScaleLayerTest, SecondBottomFromAxisZero) {
  Blob bottom({2, 3, 4}), scale({2, 3});
  FillUniform(&bottom, -1, 1);
  FillUniform(&scale, -2, 2, 5);
  Blob top;
  ScaleLayer layer(ParseLayer("name: 'sc' type: 'Scale' scale_param { axis: 0 }"));
  vector<Blob*> bottoms{&bottom, &scale}, tops{&top};
  layer.SetUp(bottoms, tops);
  EXPECT_TRUE(layer.blobs().empty());
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 24; ++i) {
    EXPECT_FLOAT_EQ(top.cpu_data()[i], bottom.cpu_data()[i] * scale.cpu_data()[i / 4]);
  }
}

TEST(ScaleLayerTest, AllRemainingAxesAndScalar) {
  Blob bottom({2, 3, 2});
  FillUniform(&bottom, -1, 1);
  Blob top;
  ScaleLayer all(ParseLayer(
      "name: 'sc' type: 'Scale' scale_param { num_axes: -1 filler { type: 'uniform' } }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  all.SetUp(bottoms, tops);
  ASSERT_EQ(all.blobs()[0]->shape(), (vector<int64_t>{3, 2}));
  all.Forward(bottoms, tops);
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(top.cpu_data()[i], bottom.cpu_data()[i] * all.blobs()[0]->cpu_data()[i % 6]);
  }
  ScaleLayer scalar(ParseLayer(
      "name: 'sc' type: 'Scale' scale_param { num_axes: 0 filler { value: 3 } }"));
  scalar.SetUp(bottoms, tops);
  ASSERT_EQ(scalar.blobs()[0]->count(), 1);
  scalar.Forward(bottoms, tops);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], 3 * bottom.cpu_data()[i]);
}

TEST(ScaleLayerTest, GradientLearned) {
  for (bool bias : {false, true}) {
    Blob bottom({2, 3, 2, 2});
    FillUniform(&bottom, -1, 1);
    Blob top;
    LayerParameter param = ParseLayer(
        "name: 'sc' type: 'Scale' scale_param { filler { type: 'uniform' min: -1 max: 1 } "
        "bias_filler { type: 'uniform' min: -1 max: 1 } }");
    param.mutable_scale_param()->set_bias_term(bias);
    ScaleLayer layer(param);
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), bottom.count() + 3 + (bias ? 3 : 0));
  }
}

TEST(ScaleLayerTest, GradientSecondBottom) {
  for (bool bias : {false, true}) {
    Blob bottom({2, 3, 2, 2}), scale({3, 2});
    FillUniform(&bottom, -1, 1);
    FillUniform(&scale, -1, 1, 9);
    Blob top;
    LayerParameter param = ParseLayer(
        "name: 'sc' type: 'Scale' scale_param { bias_filler { type: 'uniform' min: -1 max: 1 } }");
    param.mutable_scale_param()->set_bias_term(bias);
    ScaleLayer layer(param);
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom, &scale}, {&top});
    EXPECT_EQ(checker.checked(), bottom.count() + scale.count() + (bias ? 6 : 0));
  }
}

TEST(ScaleLayerTest, InPlaceMatchesOutOfPlace) {
  Blob bottom({2, 3, 2}), inplace({2, 3, 2});
  FillUniform(&bottom, -1, 1);
  inplace.CopyFrom(bottom);
  Blob top;
  const LayerParameter param = ParseLayer(
      "name: 'sc' type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' } }");
  ScaleLayer a(param), b(param);
  vector<Blob*> bottoms{&bottom}, tops{&top}, same{&inplace};
  a.SetUp(bottoms, tops);
  b.SetUp(same, same);
  b.blobs()[0]->CopyFrom(*a.blobs()[0]);
  a.Forward(bottoms, tops);
  b.Forward(same, same);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(inplace.cpu_data()[i], top.cpu_data()[i]);
  FillUniform(&top, -1, 1, 3);  // reuse as diff source
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), inplace.mutable_cpu_diff());
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), top.mutable_cpu_diff());
  for (auto* layer : {&a, &b})
    for (auto& blob : layer->blobs()) std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.f);
  a.Backward(tops, {true}, bottoms);
  b.Backward(same, {true}, same);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(inplace.cpu_diff()[i], bottom.cpu_diff()[i]);
  for (int p = 0; p < 2; ++p)
    for (int c = 0; c < 3; ++c)
      EXPECT_FLOAT_EQ(b.blobs()[p]->cpu_diff()[c], a.blobs()[p]->cpu_diff()[c]);
}

// Feature maps large enough for the parameter-gradient sums to be split between
// threads: the scale and bias gradients against sums in double precision, and bitwise
// the same results at 1 and 2 threads.
TEST(ScaleLayerTest, ParameterGradientsOnFeatureMapsMatchAndIgnoreTheThreadCount) {
  const int threads = NumThreads();
  vector<vector<float>> runs;
  for (int t : {1, 2}) {
    SetNumThreads(t);
    Blob bottom({32, 8, 30, 30}), top;
    FillUniform(&bottom, -1, 1, 3);
    ScaleLayer layer(ParseLayer("name: 'sc' type: 'Scale' scale_param { bias_term: true }"));
    vector<Blob*> bottoms{&bottom}, tops{&top};
    layer.SetUp(bottoms, tops);
    layer.Forward(bottoms, tops);
    Blob dy;
    dy.ReshapeLike(top);
    FillUniform(&dy, -1, 1, 4);
    std::copy(dy.cpu_data(), dy.cpu_data() + dy.count(), top.mutable_cpu_diff());
    layer.Backward(tops, {true}, bottoms);
    const int spatial = 30 * 30;
    for (int c = 0; c < 8; ++c) {
      double ds = 0, db = 0;
      for (int n = 0; n < 32; ++n) {
        for (int s = 0; s < spatial; ++s) {
          const int64_t i = (n * 8 + c) * spatial + s;
          ds += static_cast<double>(dy.cpu_data()[i]) * bottom.cpu_data()[i];
          db += dy.cpu_data()[i];
        }
      }
      EXPECT_NEAR(layer.blobs()[0]->cpu_diff()[c], ds, 1e-3) << "channel " << c;
      EXPECT_NEAR(layer.blobs()[1]->cpu_diff()[c], db, 1e-3) << "channel " << c;
    }
    vector<float> result(layer.blobs()[0]->cpu_diff(), layer.blobs()[0]->cpu_diff() + 8);
    result.insert(result.end(), layer.blobs()[1]->cpu_diff(), layer.blobs()[1]->cpu_diff() + 8);
    result.insert(result.end(), bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
    runs.push_back(result);
  }
  SetNumThreads(threads);
  for (size_t i = 0; i < runs[0].size(); ++i) ASSERT_EQ(runs[0][i], runs[1][i]) << i;
}

TEST(ScaleLayerTest, MismatchedScaleBottomIsAnError) {
  Blob bottom({2, 3, 4}), scale({4});
  Blob top;
  ScaleLayer layer(ParseLayer("name: 'sc' type: 'Scale' bottom: 'data' bottom: 'gamma'"));
  vector<Blob*> bottoms{&bottom, &scale}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'sc'"), std::string::npos) << what;
    EXPECT_NE(what.find("'gamma'"), std::string::npos) << what;
    EXPECT_NE(what.find("2x3x4"), std::string::npos) << what;
  }
}

// A net of conv -> BatchNorm -> Scale -> ReLU, with `scale_top` as Scale's top and
// ReLU's blob, and BatchNorm on `engine`.
NetParameter BatchNormScaleNet(const string& engine, const string& scale_top, bool relu_first) {
  const string bn_top = "c";
  string text = R"(
    name: 'bn_scale'
    state { phase: TRAIN }
    layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'
            dummy_data_param { shape { dim: 4 dim: 3 dim: 5 dim: 5 } shape { dim: 4 }
                               data_filler { type: 'gaussian' std: 1 }
                               data_filler { type: 'constant' value: 1 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'c'
            convolution_param { num_output: 8 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c'
            batch_norm_param { engine: )" + engine + R"( } }
)";
  const string relu = "    layer { name: 'relu0' type: 'ReLU' bottom: 'c' top: 'c' }\n";
  if (relu_first) text += relu;
  text += "    layer { name: 'sc' type: 'Scale' bottom: 'c' top: '" + scale_top +
          "' scale_param { bias_term: true filler { type: 'uniform' min: 0.5 max: 2 } "
          "bias_filler { type: 'uniform' min: -1 max: 1 } } }\n";
  text += "    layer { name: 'relu' type: 'ReLU' bottom: '" + scale_top + "' top: '" + scale_top + "' }\n";
  text += "    layer { name: 'ip' type: 'InnerProduct' bottom: '" + scale_top +
          "' top: 'out' inner_product_param { num_output: 3 "
          "weight_filler { type: 'gaussian' std: 0.3 } } }\n"
          "    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'label' top: 'loss' }\n";
  return ParseNet(text);
}

vector<vector<float>> ParamDiffsAfterOneStep(const NetParameter& param, bool* borrows) {
  auto context = std::make_shared<Context>();
  context->Seed(17);
  Net net(param, context);
  net.ClearParamDiffs();
  net.ForwardBackward();
  *borrows = dynamic_cast<const ScaleLayer&>(*net.layer_by_name("sc")).borrows_input();
  vector<vector<float>> diffs;
  for (Blob* p : net.learnable_params()) diffs.emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
  return diffs;
}

// In place right after BatchNorm, Scale reads BatchNorm's kept copy of its output
// instead of saving one; the gradients are bitwise those of Scale out of place.
TEST(ScaleLayerTest, InPlaceAfterBatchNormReadsItsKeptCopy) {
  for (const string engine : {"CAFFE", "DNNL"}) {
    SCOPED_TRACE(engine);
    bool borrows_in_place = false, borrows_out_of_place = false;
    const auto in_place = ParamDiffsAfterOneStep(BatchNormScaleNet(engine, "c", false), &borrows_in_place);
    const auto out_of_place = ParamDiffsAfterOneStep(BatchNormScaleNet(engine, "s", false), &borrows_out_of_place);
    EXPECT_FALSE(borrows_out_of_place);
    EXPECT_TRUE(borrows_in_place);
    ASSERT_EQ(in_place.size(), out_of_place.size());
    for (size_t p = 0; p < in_place.size(); ++p) {
      ASSERT_EQ(in_place[p].size(), out_of_place[p].size());
      EXPECT_EQ(std::memcmp(in_place[p].data(), out_of_place[p].data(), in_place[p].size() * sizeof(float)), 0)
          << "param " << p;
    }
  }
}

// With a layer between them that changes the values (ReLU in place), BatchNorm's
// copy is not Scale's input: Scale saves its own.
TEST(ScaleLayerTest, InPlaceAfterAnotherLayerSavesItsOwnCopy) {
  bool borrows = true;
  ParamDiffsAfterOneStep(BatchNormScaleNet("CAFFE", "c", true), &borrows);
  EXPECT_FALSE(borrows);
}

}  // namespace caffe
