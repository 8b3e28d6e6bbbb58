#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/util/num_threads.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

}  // namespace

// Two TRAIN passes on a 2 x 2 x 1 x 2 batch (4 values per channel), maf 0.5:
//   pass 1: channel 0 {1,2,3,6}: mean 3, biased var 3.5, unbiased 14/3;
//           channel 1 {0,0,4,4}: mean 2, biased var 4, unbiased 16/3.
//   pass 2: channel 0 {2,2,2,2}: mean 2, var 0; channel 1 {-1,1,-1,1}: mean 0, var 1, unbiased 4/3.
//   normalizer 1 -> 1.5; mean {3,2} -> {3.5,1}; var {14/3,16/3} -> {7/3,4}.
TEST(BatchNormLayerTest, RunningStatisticsAfterTwoTrainPasses) {
  Blob bottom({2, 2, 1, 2});
  Blob top;
  BatchNormLayer layer(ParseLayer(
      "name: 'bn' type: 'BatchNorm' phase: TRAIN "
      "batch_norm_param { moving_average_fraction: 0.5 eps: 0 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);

  SetValues(&bottom, {1, 2, 0, 0, 3, 6, 4, 4});
  layer.Forward(bottoms, tops);
  // Channel 0 has standard deviation sqrt(3.5), channel 1 exactly 2.
  const float sd0 = std::sqrt(3.5f);
  const vector<float> expected_top{-2 / sd0, -1 / sd0, -1, -1, 0, 3 / sd0, 1, 1};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(top.cpu_data()[i], expected_top[i], 1e-5) << i;
  EXPECT_FLOAT_EQ(layer.blobs()[2]->cpu_data()[0], 1.f);
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[0], 3.f);
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[1], 2.f);
  EXPECT_FLOAT_EQ(layer.blobs()[1]->cpu_data()[0], 14.f / 3);
  EXPECT_FLOAT_EQ(layer.blobs()[1]->cpu_data()[1], 16.f / 3);

  SetValues(&bottom, {2, 2, -1, 1, 2, 2, -1, 1});
  layer.Forward(bottoms, tops);
  EXPECT_FLOAT_EQ(layer.blobs()[2]->cpu_data()[0], 1.5f);
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[0], 3.5f);
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[1], 1.f);
  EXPECT_FLOAT_EQ(layer.blobs()[1]->cpu_data()[0], 7.f / 3);
  EXPECT_FLOAT_EQ(layer.blobs()[1]->cpu_data()[1], 4.f);

  // A TEST-phase layer with those blobs normalizes with mean/1.5 and var/1.5.
  LayerParameter test_param = ParseLayer(
      "name: 'bn' type: 'BatchNorm' phase: TEST batch_norm_param { eps: 0.001 }");
  for (const auto& blob : layer.blobs()) blob->ToProto(test_param.add_blobs());
  BatchNormLayer test_layer(test_param);
  Blob test_top;
  vector<Blob*> test_tops{&test_top};
  test_layer.SetUp(bottoms, test_tops);
  test_layer.Forward(bottoms, test_tops);
  const float mean[] = {3.5f / 1.5f, 1.f / 1.5f}, var[] = {(7.f / 3) / 1.5f, 4.f / 1.5f};
  for (int i = 0; i < 8; ++i) {
    const int c = (i / 2) % 2;
    EXPECT_NEAR(test_top.cpu_data()[i],
                (bottom.cpu_data()[i] - mean[c]) / std::sqrt(var[c] + 0.001f), 1e-5)
        << i;
  }
  // Global statistics are not updated.
  EXPECT_FLOAT_EQ(test_layer.blobs()[2]->cpu_data()[0], 1.5f);
}

TEST(BatchNormLayerTest, TrainOutputHasZeroMeanUnitVariancePerChannel2D) {
  Blob bottom({16, 3});
  FillUniform(&bottom, -3, 5);
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int c = 0; c < 3; ++c) {
    double sum = 0, squares = 0;
    for (int n = 0; n < 16; ++n) {
      const float y = top.cpu_data()[n * 3 + c];
      sum += y;
      squares += y * y;
    }
    EXPECT_NEAR(sum / 16, 0, 1e-5);
    EXPECT_NEAR(squares / 16, 1, 1e-3);
  }
}

TEST(BatchNormLayerTest, GlobalStatsWithZeroNormalizerUsesZeroStatistics) {
  Blob bottom({2, 3});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' batch_norm_param { "
                                  "use_global_stats: true eps: 0.25 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], bottom.cpu_data()[i] * 2.f);
}

TEST(BatchNormLayerTest, StatisticsAreNotLearned) {
  Blob bottom({2, 3});
  Blob top;
  BatchNormLayer layer(ParseLayer(
      "name: 'bn' type: 'BatchNorm' param { lr_mult: 1 } param { lr_mult: 0 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.layer_param().param_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(layer.param_propagate_down(i));
    EXPECT_EQ(layer.layer_param().param(i).lr_mult(), 0.f);
  }
}

TEST(BatchNormLayerTest, GradientTrain) {
  Blob bottom({3, 2, 2, 3});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
  GradientChecker checker(1e-3f, 5e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count());
}

TEST(BatchNormLayerTest, GradientTrain2D) {
  Blob bottom({5, 4});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
  GradientChecker checker(1e-3f, 5e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count());
}

TEST(BatchNormLayerTest, GradientGlobalStats) {
  Blob bottom({2, 3, 2, 2});
  FillUniform(&bottom, -1, 1);
  Blob top;
  BatchNormLayer layer(ParseLayer(
      "name: 'bn' type: 'BatchNorm' phase: TRAIN batch_norm_param { use_global_stats: true }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  SetValues(layer.blobs()[0].get(), {0.2f, -0.4f, 1.f});
  SetValues(layer.blobs()[1].get(), {1.f, 0.5f, 2.f});
  SetValues(layer.blobs()[2].get(), {2.f});
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, bottoms, tops);
  EXPECT_EQ(checker.checked(), bottom.count());
  // The running statistics stay as set.
  EXPECT_FLOAT_EQ(layer.blobs()[2]->cpu_data()[0], 2.f);
}

TEST(BatchNormLayerTest, InPlaceBackwardMatchesOutOfPlace) {
  Blob bottom({4, 3, 2}), inplace({4, 3, 2});
  FillUniform(&bottom, -1, 1);
  inplace.CopyFrom(bottom);
  Blob top;
  const LayerParameter param = ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN");
  BatchNormLayer a(param), b(param);
  vector<Blob*> bottoms{&bottom}, tops{&top}, same{&inplace};
  a.SetUp(bottoms, tops);
  b.SetUp(same, same);
  a.Forward(bottoms, tops);
  b.Forward(same, same);
  FillUniform(&top, -1, 1, 99);
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), top.mutable_cpu_diff());
  std::copy(top.cpu_diff(), top.cpu_diff() + top.count(), inplace.mutable_cpu_diff());
  a.Backward(tops, {true}, bottoms);
  b.Backward(same, {true}, same);
  for (int64_t i = 0; i < bottom.count(); ++i) {
    EXPECT_NEAR(inplace.cpu_diff()[i], bottom.cpu_diff()[i], 1e-6);
  }
}

// Feature maps of 13 x 13 (whole rows of lanes, a single vector and a scalar tail in
// the plane sums), offset by 1000 so that E[x^2] - E[x]^2 in float would lose the
// variance, and by 3 more per sample so that the planes' means differ by more than
// their spread (the statistics combine per-plane sums and deviations): forward and
// backward against the formulas in double precision.
TEST(BatchNormLayerTest, FeatureMapsMatchADoublePrecisionReference) {
  const int num = 3, channels = 4, spatial = 13 * 13;
  Blob bottom({num, channels, 13, 13}), top;
  FillUniform(&bottom, -1, 1, 5);
  for (int64_t i = 0; i < bottom.count(); ++i) {
    bottom.mutable_cpu_data()[i] += 1000.f + 3.f * static_cast<float>(i / (channels * spatial));
  }
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN batch_norm_param { eps: 0.00001 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  FillUniform(&top, -1, 1, 6);
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), top.mutable_cpu_diff());
  layer.Forward(bottoms, tops);  // top's data back to the layer's output
  layer.Backward(tops, {true}, bottoms);
  const double m = num * spatial;
  for (int c = 0; c < channels; ++c) {
    auto at = [&](const float* p, int n, int s) { return static_cast<double>(p[(n * channels + c) * spatial + s]); };
    double mean = 0, variance = 0;
    for (int n = 0; n < num; ++n) for (int s = 0; s < spatial; ++s) mean += at(bottom.cpu_data(), n, s) / m;
    for (int n = 0; n < num; ++n) {
      for (int s = 0; s < spatial; ++s) variance += std::pow(at(bottom.cpu_data(), n, s) - mean, 2) / m;
    }
    const double inv_std = 1 / std::sqrt(variance + 1e-5);
    double mean_dy = 0, mean_dy_xhat = 0;
    for (int n = 0; n < num; ++n) {
      for (int s = 0; s < spatial; ++s) {
        const double x_hat = (at(bottom.cpu_data(), n, s) - mean) * inv_std;
        mean_dy += at(top.cpu_diff(), n, s) / m;
        mean_dy_xhat += at(top.cpu_diff(), n, s) * x_hat / m;
      }
    }
    for (int n = 0; n < num; ++n) {
      for (int s = 0; s < spatial; ++s) {
        const double x_hat = (at(bottom.cpu_data(), n, s) - mean) * inv_std;
        ASSERT_NEAR(at(top.cpu_data(), n, s), x_hat, 2e-3) << "channel " << c;
        const double dx = (at(top.cpu_diff(), n, s) - mean_dy - x_hat * mean_dy_xhat) * inv_std;
        ASSERT_NEAR(at(bottom.cpu_diff(), n, s), dx, 2e-3 * inv_std) << "channel " << c;
      }
    }
  }
}

// Each channel's sums keep one order whatever the threads: a run repeats bitwise with
// another -threads value (the shape is large enough for ParallelFor to split it).
TEST(BatchNormLayerTest, ResultsDoNotDependOnTheThreadCount) {
  const int threads = NumThreads();
  vector<vector<float>> outputs;
  for (int t : {1, 2}) {
    SetNumThreads(t);
    Blob bottom({8, 16, 17, 17}), top;
    FillUniform(&bottom, -2, 3, 7);
    BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
    vector<Blob*> bottoms{&bottom}, tops{&top};
    layer.SetUp(bottoms, tops);
    layer.Forward(bottoms, tops);
    Blob dy;
    dy.ReshapeLike(top);
    FillUniform(&dy, -1, 1, 8);
    std::copy(dy.cpu_data(), dy.cpu_data() + dy.count(), top.mutable_cpu_diff());
    layer.Backward(tops, {true}, bottoms);
    vector<float> result(top.cpu_data(), top.cpu_data() + top.count());
    result.insert(result.end(), bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
    outputs.push_back(result);
  }
  SetNumThreads(threads);
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  for (size_t i = 0; i < outputs[0].size(); ++i) ASSERT_EQ(outputs[0][i], outputs[1][i]) << i;
}

TEST(BatchNormLayerTest, ChannelMismatchIsAnError) {
  Blob bottom({2, 3, 2, 2});
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  bottom.Reshape({2, 4, 2, 2});
  try {
    layer.Forward(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'bn'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 channels"), std::string::npos) << e.what();
  }
}

TEST(BatchNormLayerTest, AnEmptyFeatureMapIsAnError) {
  Blob bottom({2, 3, 0, 2});
  Blob top;
  BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  const std::string error = ErrorOf([&] { layer.SetUp(bottoms, tops); });
  EXPECT_NE(error.find("layer 'bn'"), std::string::npos) << error;
  EXPECT_NE(error.find("no positions per channel"), std::string::npos) << error;
}

}  // namespace caffe
