#include <gtest/gtest.h>

#include "caffe/layers/dropout_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

LayerParameter DropoutParam(const std::string& phase, float ratio, bool scale_train = true) {
  LayerParameter param = ParseLayer("name: 'drop' type: 'Dropout' phase: " + phase);
  param.mutable_dropout_param()->set_dropout_ratio(ratio);
  param.mutable_dropout_param()->set_scale_train(scale_train);
  return param;
}

}  // namespace

TEST(DropoutLayerTest, TestPhaseIsIdentity) {
  Blob bottom({3, 4, 5});
  FillUniform(&bottom, -1, 1);
  Blob top;
  DropoutLayer layer(DropoutParam("TEST", 0.3f));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int64_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(top.cpu_data()[i], bottom.cpu_data()[i]);
  std::fill_n(top.mutable_cpu_diff(), top.count(), 2.f);
  layer.Backward(tops, {true}, bottoms);
  for (int64_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], 2.f);
}

TEST(DropoutLayerTest, TestPhaseWithoutScaleTrainMultipliesByKeepProbability) {
  Blob bottom({2, 5});
  FillUniform(&bottom, -1, 1);
  Blob top;
  DropoutLayer layer(DropoutParam("TEST", 0.25f, false));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int64_t i = 0; i < bottom.count(); ++i) {
    EXPECT_FLOAT_EQ(top.cpu_data()[i], 0.75f * bottom.cpu_data()[i]);
  }
}

TEST(DropoutLayerTest, TrainKeepsFractionAndPreservesMean) {
  for (bool scale_train : {true, false}) {
    Blob bottom({100, 200});
    std::fill_n(bottom.mutable_cpu_data(), bottom.count(), 3.f);
    Blob top;
    DropoutLayer layer(DropoutParam("TRAIN", 0.4f, scale_train));
    vector<Blob*> bottoms{&bottom}, tops{&top};
    layer.SetUp(bottoms, tops);
    layer.Forward(bottoms, tops);
    const float kept_value = scale_train ? 3.f / 0.6f : 3.f;
    int64_t kept = 0;
    double sum = 0;
    for (int64_t i = 0; i < top.count(); ++i) {
      const float y = top.cpu_data()[i];
      ASSERT_TRUE(y == 0.f || std::abs(y - kept_value) < 1e-5) << y;
      kept += y != 0.f;
      sum += y;
    }
    EXPECT_NEAR(double(kept) / top.count(), 0.6, 0.02);
    // Train-time mean equals the test-time output's mean.
    const double test_value = scale_train ? 3.0 : 3.0 * 0.6;
    EXPECT_NEAR(sum / top.count(), test_value, 0.04 * test_value);
  }
}

TEST(DropoutLayerTest, SameSeedSameMaskAndBackwardUsesIt) {
  Blob bottom({4, 50});
  FillUniform(&bottom, 0.5, 1);  // never zero, so a zero output means dropped
  Blob top_a, top_b;
  DropoutLayer layer(DropoutParam("TRAIN", 0.5f));
  vector<Blob*> bottoms{&bottom}, ta{&top_a}, tb{&top_b};
  layer.SetUp(bottoms, ta);
  layer.context().Seed(42);
  layer.Forward(bottoms, ta);
  layer.context().Seed(42);
  layer.Forward(bottoms, tb);
  std::fill_n(top_b.mutable_cpu_diff(), top_b.count(), 1.f);
  layer.Backward(tb, {true}, bottoms);
  for (int64_t i = 0; i < bottom.count(); ++i) {
    EXPECT_EQ(top_a.cpu_data()[i], top_b.cpu_data()[i]);
    EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], top_b.cpu_data()[i] == 0.f ? 0.f : 2.f);
  }
}

TEST(DropoutLayerTest, InPlaceMatchesOutOfPlace) {
  Blob bottom({3, 30}), inplace({3, 30});
  FillUniform(&bottom, 0.5, 1);
  inplace.CopyFrom(bottom);
  Blob top;
  DropoutLayer a(DropoutParam("TRAIN", 0.3f)), b(DropoutParam("TRAIN", 0.3f));
  vector<Blob*> bottoms{&bottom}, tops{&top}, same{&inplace};
  a.SetUp(bottoms, tops);
  b.SetUp(same, same);
  a.context().Seed(7);
  b.context().Seed(7);
  a.Forward(bottoms, tops);
  b.Forward(same, same);
  std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
  std::fill_n(inplace.mutable_cpu_diff(), inplace.count(), 1.f);
  a.Backward(tops, {true}, bottoms);
  b.Backward(same, {true}, same);
  for (int64_t i = 0; i < top.count(); ++i) {
    EXPECT_EQ(inplace.cpu_data()[i], top.cpu_data()[i]);
    EXPECT_EQ(inplace.cpu_diff()[i], bottom.cpu_diff()[i]);
  }
}

TEST(DropoutLayerTest, GradientWithFixedSeed) {
  for (bool scale_train : {true, false}) {
    Blob bottom({2, 3, 4});
    FillUniform(&bottom, -1, 1);
    Blob top;
    DropoutLayer layer(DropoutParam("TRAIN", 0.5f, scale_train));
    GradientChecker checker(1e-2f, 1e-3f, 1234);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), bottom.count());
  }
}

TEST(DropoutLayerTest, RatioOfOneIsAnError) {
  Blob bottom({2, 2});
  Blob top;
  DropoutLayer layer(DropoutParam("TRAIN", 1.f));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'drop'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dropout_ratio"), std::string::npos) << e.what();
  }
}

}  // namespace caffe
