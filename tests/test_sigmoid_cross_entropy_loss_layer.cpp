#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/sigmoid_cross_entropy_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Scores (2 x 3 x 2) and 0/1 targets, with a few targets set to the ignore label -1.
struct Inputs {
  Blob scores{vector<int64_t>{2, 3, 2}};
  Blob targets{vector<int64_t>{2, 3, 2}};
  explicit Inputs(bool with_ignored = false) {
    FillUniform(&scores, -4, 4);
    FillUniform(&targets, 0, 1, 99);
    float* t = targets.mutable_cpu_data();
    for (int i = 0; i < targets.count(); ++i) t[i] = t[i] > 0.5f ? 1.f : 0.f;
    if (with_ignored) t[1] = t[6] = t[7] = -1;
  }
  vector<Blob*> bottoms() { return {&scores, &targets}; }
};

// Naive sum of -[t log s + (1 - t) log(1 - s)] over the non-ignored entries.
double NaiveLoss(const Blob& x, const Blob& t, int64_t* valid) {
  double sum = 0;
  *valid = 0;
  for (int64_t i = 0; i < x.count(); ++i) {
    if (t.cpu_data()[i] == -1) continue;
    const double s = 1 / (1 + std::exp(-double(x.cpu_data()[i])));
    sum -= t.cpu_data()[i] * std::log(s) + (1 - t.cpu_data()[i]) * std::log(1 - s);
    ++*valid;
  }
  return sum;
}

float Loss(const string& proto, Inputs* in) {
  SigmoidCrossEntropyLossLayer layer(ParseLayer(proto));
  Blob top;
  layer.SetUp(in->bottoms(), {&top});
  return layer.Forward(in->bottoms(), {&top});
}

}  // namespace

TEST(SigmoidCrossEntropyLossLayerTest, NormalizationModes) {
  Inputs in;
  int64_t valid;
  const double sum = NaiveLoss(in.scores, in.targets, &valid);
  const string base = "name: 's' type: 'SigmoidCrossEntropyLoss' ";
  // Neither field set: the batch size, BVLC Caffe's legacy default for this layer.
  EXPECT_NEAR(Loss(base, &in), sum / 2, 1e-5);
  EXPECT_NEAR(Loss(base + "loss_param { normalize: false }", &in), sum / 2, 1e-5);
  EXPECT_NEAR(Loss(base + "loss_param { normalize: true }", &in), sum / 12, 1e-5);
  EXPECT_NEAR(Loss(base + "loss_param { normalization: VALID }", &in), sum / 12, 1e-5);
  EXPECT_NEAR(Loss(base + "loss_param { normalization: FULL }", &in), sum / 12, 1e-5);
  EXPECT_NEAR(Loss(base + "loss_param { normalization: NONE }", &in), sum, 1e-4);
  EXPECT_NEAR(Loss(base + "loss_weight: 3", &in), 3 * sum / 2, 1e-4);
}

TEST(SigmoidCrossEntropyLossLayerTest, IgnoreLabel) {
  Inputs in(true);
  int64_t valid;
  const double sum = NaiveLoss(in.scores, in.targets, &valid);
  ASSERT_EQ(valid, 9);
  const string base = "name: 's' type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 ";
  EXPECT_NEAR(Loss(base + "normalization: VALID }", &in), sum / 9, 1e-5);
  EXPECT_NEAR(Loss(base + "normalization: FULL }", &in), sum / 12, 1e-5);
}

TEST(SigmoidCrossEntropyLossLayerTest, LargeScoresStayFinite) {
  Blob x({1, 4}), t({1, 4}), top;
  const float xs[] = {100, -100, 100, -100}, ts[] = {0, 1, 1, 0};
  std::copy(xs, xs + 4, x.mutable_cpu_data());
  std::copy(ts, ts + 4, t.mutable_cpu_data());
  SigmoidCrossEntropyLossLayer layer(ParseLayer("name: 's' type: 'SigmoidCrossEntropyLoss'"));
  layer.SetUp({&x, &t}, {&top});
  EXPECT_NEAR(layer.Forward({&x, &t}, {&top}), 200, 1e-3);
  layer.Backward({&top}, {true, false}, {&x, &t});
  const float expected[] = {1, -1, 0, 0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x.cpu_diff()[i], expected[i], 1e-6) << i;
}

TEST(SigmoidCrossEntropyLossLayerTest, Gradient) {
  for (const char* proto :
       {"name: 's' type: 'SigmoidCrossEntropyLoss'",
        "name: 's' type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 }"}) {
    Inputs in(true);
    SigmoidCrossEntropyLossLayer layer(ParseLayer(proto));
    Blob top;
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, in.bottoms(), {&top}, 0);
    EXPECT_EQ(checker.checked(), 12) << proto;
  }
}

TEST(SigmoidCrossEntropyLossLayerTest, MismatchedCountsAreAnError) {
  Blob x({2, 3}), t({2, 4}), top;
  SigmoidCrossEntropyLossLayer layer(ParseLayer("name: 's' type: 'SigmoidCrossEntropyLoss'"));
  try {
    layer.SetUp({&x, &t}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 's'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("2x4"), string::npos) << e.what();
  }
  Blob short_batch({1, 6});
  EXPECT_THROW(layer.SetUp({&x, &short_batch}, {&top}), Error);
}

TEST(SigmoidCrossEntropyLossLayerTest, BackwardToTargetsIsAnError) {
  Inputs in;
  SigmoidCrossEntropyLossLayer layer(ParseLayer("name: 's' type: 'SigmoidCrossEntropyLoss'"));
  Blob top;
  layer.SetUp(in.bottoms(), {&top});
  layer.Forward(in.bottoms(), {&top});
  EXPECT_THROW(layer.Backward({&top}, {true, true}, in.bottoms()), Error);
}

}  // namespace caffe
