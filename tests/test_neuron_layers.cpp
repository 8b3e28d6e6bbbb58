// Elementwise layers: PReLU, ELU, Clip, Swish, AbsVal, Power, Exp, Log, BNLL, Threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/absval_layer.hpp"
#include "caffe/layers/bnll_layer.hpp"
#include "caffe/layers/elu_layer.hpp"
#include "caffe/layers/exp_layer.hpp"
#include "caffe/layers/log_layer.hpp"
#include "caffe/layers/power_layer.hpp"
#include "caffe/layers/prelu_layer.hpp"
#include "caffe/layers/threshold_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Runs the layer described by `proto` forward (out of place) on `x` of shape `shape`.
vector<float> Forward(const string& proto, const vector<int64_t>& shape, const vector<float>& x) {
  Blob bottom(shape), top;
  SetValues(&bottom, x);
  auto layer = LayerRegistry::CreateLayer(ParseLayer(proto));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer->SetUp(bottoms, tops);
  layer->Forward(bottoms, tops);
  EXPECT_EQ(top.shape(), shape);
  return vector<float>(top.cpu_data(), top.cpu_data() + top.count());
}

// Checks each output against f(x) elementwise.
void ExpectElementwise(const string& proto, const vector<float>& x,
                       const std::function<double(double)>& f, double tolerance = 1e-5) {
  const vector<float> y = Forward(proto, {static_cast<int64_t>(x.size())}, x);
  for (size_t i = 0; i < x.size(); ++i) {
    const double expected = f(x[i]);
    EXPECT_NEAR(y[i], expected, tolerance * std::max(1.0, std::fabs(expected)))
        << proto << " at x = " << x[i];
  }
}

void CheckGradient(const string& proto, Blob* bottom, float kink = 0, float kink_range = -1,
                   float threshold = 1e-3f) {
  auto layer = LayerRegistry::CreateLayer(ParseLayer(proto));
  Blob top;
  GradientChecker checker(1e-2f, threshold, 1701, kink, kink_range);
  checker.CheckGradient(layer.get(), {bottom}, {&top});
  EXPECT_GT(checker.checked(), bottom->count() / 2) << proto;
}

// Runs forward and backward out of place, then in place on a copy of the input, and
// expects the same outputs, input gradients and weight gradients.
void ExpectInPlaceMatches(const string& proto, const Blob& input) {
  const LayerParameter param = ParseLayer(proto);
  Blob top_diff(input.shape());
  FillUniform(&top_diff, -1, 1, 7);

  Blob bottom(input.shape()), top;
  bottom.CopyFrom(input);
  auto layer = LayerRegistry::CreateLayer(param);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer->SetUp(bottoms, tops);
  layer->Forward(bottoms, tops);
  std::copy_n(top_diff.cpu_data(), top.count(), top.mutable_cpu_diff());
  layer->Backward(tops, {true}, bottoms);

  Blob shared(input.shape());
  shared.CopyFrom(input);
  auto in_place = LayerRegistry::CreateLayer(param);
  vector<Blob*> both{&shared};
  in_place->SetUp(both, both);
  in_place->Forward(both, both);
  for (int64_t i = 0; i < top.count(); ++i) {
    ASSERT_FLOAT_EQ(shared.cpu_data()[i], top.cpu_data()[i]) << proto << " output " << i;
  }
  std::copy_n(top_diff.cpu_data(), shared.count(), shared.mutable_cpu_diff());
  in_place->Backward(both, {true}, both);
  for (int64_t i = 0; i < bottom.count(); ++i) {
    ASSERT_FLOAT_EQ(shared.cpu_diff()[i], bottom.cpu_diff()[i]) << proto << " gradient " << i;
  }
  ASSERT_EQ(layer->blobs().size(), in_place->blobs().size());
  for (size_t b = 0; b < layer->blobs().size(); ++b) {
    for (int64_t i = 0; i < layer->blobs()[b]->count(); ++i) {
      EXPECT_NEAR(layer->blobs()[b]->cpu_diff()[i], in_place->blobs()[b]->cpu_diff()[i], 1e-5)
          << proto << " weight gradient " << i;
    }
  }
}

// Error text check: the message names the layer and contains `fragment`.
template <typename Fn>
void ExpectError(Fn fn, const string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected a caffe::Error containing '" << fragment << "'";
  } catch (const Error& e) {
    const string what = e.what();
    EXPECT_NE(what.find("layer '"), string::npos) << what;
    EXPECT_NE(what.find(fragment), string::npos) << what;
  }
}

const char kPReLU[] = "name: 'p' type: 'PReLU'";

}  // namespace

// ---------------------------------------------------------------- PReLU

TEST(PReLULayerTest, ForwardPerChannelSlopes) {
  Blob bottom({2, 2, 3}), top;
  SetValues(&bottom, {1, -2, 0, -1, 3, -4, -1, 2, -3, 5, -6, 0.5f});
  PReLULayer layer(ParseLayer(kPReLU));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.blobs()[0]->shape(), vector<int64_t>{2});
  // Default filler: constant 0.25.
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[0], 0.25f);
  EXPECT_FLOAT_EQ(layer.blobs()[0]->cpu_data()[1], 0.25f);
  layer.blobs()[0]->mutable_cpu_data()[0] = 0.5f;
  layer.blobs()[0]->mutable_cpu_data()[1] = -2.f;
  layer.Forward(bottoms, tops);
  const vector<float> expected{1, -1, 0, 2, 3, 8, -0.5f, 2, -1.5f, 5, 12, 0.5f};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]) << i;
}

TEST(PReLULayerTest, ChannelSharedUsesOneScalarSlope) {
  Blob bottom({1, 3, 2}), top;
  SetValues(&bottom, {-1, 1, -2, 2, -4, 4});
  PReLULayer layer(ParseLayer(
      "name: 'p' type: 'PReLU' prelu_param { channel_shared: true "
      "filler { type: 'constant' value: 0.1 } }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  EXPECT_EQ(layer.blobs()[0]->count(), 1);
  layer.Forward(bottoms, tops);
  const vector<float> expected{-0.1f, 1, -0.2f, 2, -0.4f, 4};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]) << i;
}

TEST(PReLULayerTest, Gradient) {
  for (const char* proto :
       {"name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: 0.1 max: 0.6 } }",
        "name: 'p' type: 'PReLU' prelu_param { channel_shared: true }"}) {
    Blob bottom({2, 3, 2, 2});
    FillUniform(&bottom, -1, 1);
    PReLULayer layer(ParseLayer(proto));
    Blob top;
    GradientChecker checker(1e-2f, 1e-3f, 1701, 0.f, 0.02f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_GT(checker.checked(), 20) << proto;
  }
}

TEST(PReLULayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({2, 3, 4});
  FillUniform(&input, -1, 1);
  ExpectInPlaceMatches(
      "name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: 0.1 max: 0.6 } }",
      input);
  ExpectInPlaceMatches("name: 'p' type: 'PReLU' prelu_param { channel_shared: true }", input);
}

TEST(PReLULayerTest, BadShapesAreErrors) {
  Blob flat({4}), top;
  ExpectError([&] { PReLULayer(ParseLayer(kPReLU)).SetUp({&flat}, {&top}); }, "channel axis");
  // Inline slopes of the wrong size.
  LayerParameter param = ParseLayer(kPReLU);
  BlobProto* slopes = param.add_blobs();
  slopes->mutable_shape()->add_dim(2);
  slopes->add_data(0.1f);
  slopes->add_data(0.2f);
  Blob bottom({1, 3, 2});
  ExpectError([&] { PReLULayer(param).SetUp({&bottom}, {&top}); }, "slope");
}

// ---------------------------------------------------------------- ELU

TEST(ELULayerTest, Forward) {
  const vector<float> x{-3, -1, -0.1f, 0, 0.2f, 2};
  ExpectElementwise("name: 'e' type: 'ELU'", x,
                    [](double v) { return v > 0 ? v : std::exp(v) - 1; });
  ExpectElementwise("name: 'e' type: 'ELU' elu_param { alpha: 0.5 }", x,
                    [](double v) { return v > 0 ? v : 0.5 * (std::exp(v) - 1); });
}

TEST(ELULayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -2, 2);
  CheckGradient("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", &bottom, 0.f, 0.02f);
}

TEST(ELULayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({3, 5});
  FillUniform(&input, -2, 2);
  ExpectInPlaceMatches("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", input);
  ExpectInPlaceMatches("name: 'e' type: 'ELU' elu_param { alpha: -0.5 }", input);
}

// ---------------------------------------------------------------- Clip

const char kClip[] = "name: 'c' type: 'Clip' clip_param { min: -1 max: 0.5 }";

TEST(ClipLayerTest, Forward) {
  ExpectElementwise(kClip, {-3, -1, -0.4f, 0, 0.5f, 0.7f, 9},
                    [](double v) { return std::min(std::max(v, -1.0), 0.5); });
}

// The gradient passes at and between the bounds, and is 0 beyond them.
TEST(ClipLayerTest, Backward) {
  Blob bottom({6}), top;
  SetValues(&bottom, {-3, -1, -0.4f, 0.5f, 0.7f, 9});
  auto layer = LayerRegistry::CreateLayer(ParseLayer(kClip));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  std::fill_n(top.mutable_cpu_diff(), 6, 2.f);
  layer->Backward({&top}, {true}, {&bottom});
  EXPECT_EQ(vector<float>(bottom.cpu_diff(), bottom.cpu_diff() + 6),
            (vector<float>{0, 2, 2, 2, 0, 0}));
}

TEST(ClipLayerTest, Gradient) {
  // Values at least 0.05 from either bound: finite differences of step 0.01 see no kink.
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -2, 2);
  float* x = bottom.mutable_cpu_data();
  for (int64_t i = 0; i < bottom.count(); ++i) {
    for (const float bound : {-1.f, 0.5f}) {
      if (std::fabs(x[i] - bound) < 0.05f) x[i] = bound + (x[i] < bound ? -0.1f : 0.1f);
    }
  }
  CheckGradient(kClip, &bottom);
}

TEST(ClipLayerTest, InPlaceMatchesOutOfPlace) {
  // Values exactly at the bounds, where only the kept input tells the gradient apart.
  Blob input({2, 5});
  SetValues(&input, {-3, -1, -0.4f, 0.5f, 0.7f, 9, -1, 0.5f, 0, -2});
  ExpectInPlaceMatches(kClip, input);
}

TEST(ClipLayerTest, BoundsAreRequired) {
  Blob bottom({3}), top;
  ExpectError(
      [&] {
        LayerRegistry::CreateLayer(ParseLayer("name: 'c' type: 'Clip' clip_param { min: 0 }"))
            ->SetUp({&bottom}, {&top});
      },
      "clip_param { min max }");
  ExpectError(
      [&] {
        LayerRegistry::CreateLayer(
            ParseLayer("name: 'c' type: 'Clip' clip_param { min: 1 max: 0 }"))
            ->SetUp({&bottom}, {&top});
      },
      "above max");
}

// ---------------------------------------------------------------- Swish

TEST(SwishLayerTest, Forward) {
  const vector<float> x{-4, -1, -0.1f, 0, 0.3f, 2, 6};
  ExpectElementwise("name: 's' type: 'Swish'", x, [](double v) { return v / (1 + std::exp(-v)); });
  ExpectElementwise("name: 's' type: 'Swish' swish_param { beta: 1.7 }", x,
                    [](double v) { return v / (1 + std::exp(-1.7 * v)); });
}

TEST(SwishLayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -3, 3);
  CheckGradient("name: 's' type: 'Swish'", &bottom);
  CheckGradient("name: 's' type: 'Swish' swish_param { beta: 0.6 }", &bottom);
}

TEST(SwishLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({3, 5});
  FillUniform(&input, -3, 3);
  ExpectInPlaceMatches("name: 's' type: 'Swish' swish_param { beta: 1.7 }", input);
}

// ---------------------------------------------------------------- AbsVal

TEST(AbsValLayerTest, Forward) {
  ExpectElementwise("name: 'a' type: 'AbsVal'", {-3, -0.5f, 0, 0.25f, 7},
                    [](double v) { return std::fabs(v); });
}

TEST(AbsValLayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -1, 1);
  CheckGradient("name: 'a' type: 'AbsVal'", &bottom, 0.f, 0.02f);
}

TEST(AbsValLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({4, 5});
  FillUniform(&input, -1, 1);
  ExpectInPlaceMatches("name: 'a' type: 'AbsVal'", input);
}

// ---------------------------------------------------------------- Power

TEST(PowerLayerTest, Forward) {
  const vector<float> x{0.1f, 0.5f, 1, 2.5f};
  ExpectElementwise("name: 'p' type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 0.5 }",
                    x, [](double v) { return std::pow(0.5 + 0.83 * v, 0.37); });
  ExpectElementwise("name: 'p' type: 'Power' power_param { power: 2 scale: -1.5 shift: 1 }",
                    {-2, -0.5f, 0, 1.5f}, [](double v) { return std::pow(1 - 1.5 * v, 2); });
  ExpectElementwise("name: 'p' type: 'Power' power_param { scale: 3 shift: -1 }",
                    {-2, 0, 1.5f}, [](double v) { return 3 * v - 1; });
  ExpectElementwise("name: 'p' type: 'Power' power_param { power: 0 scale: 3 shift: -1 }",
                    {-2, 0, 1.5f}, [](double) { return 1.0; });
  ExpectElementwise("name: 'p' type: 'Power' power_param { power: 3 scale: 0 shift: 2 }",
                    {-2, 0, 1.5f}, [](double) { return 8.0; });
}

TEST(PowerLayerTest, Gradient) {
  for (const char* proto :
       {"name: 'p' type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 0.5 }",
        "name: 'p' type: 'Power' power_param { power: -1.5 scale: 0.8 shift: 1.5 }",
        "name: 'p' type: 'Power' power_param { power: 2 scale: 0.83 shift: -1 }",
        "name: 'p' type: 'Power' power_param { power: 1 scale: 0.83 shift: -1 }",
        "name: 'p' type: 'Power' power_param { power: 0 scale: 0.83 shift: -1 }"}) {
    Blob bottom({2, 3, 4});
    FillUniform(&bottom, 0.1f, 1);  // keeps shift + scale * x positive for fractional powers
    CheckGradient(proto, &bottom);
  }
}

TEST(PowerLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({2, 7});
  FillUniform(&input, 0.1f, 1);
  ExpectInPlaceMatches("name: 'p' type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 0.5 }",
                       input);
  ExpectInPlaceMatches("name: 'p' type: 'Power' power_param { power: 2 scale: 2 shift: -1 }",
                       input);
}

// ---------------------------------------------------------------- Exp

TEST(ExpLayerTest, Forward) {
  const vector<float> x{-2, -0.5f, 0, 1, 1.5f};
  ExpectElementwise("name: 'e' type: 'Exp'", x, [](double v) { return std::exp(v); });
  ExpectElementwise("name: 'e' type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }", x,
                    [](double v) { return std::pow(2.0, 1 + 0.5 * v); });
  ExpectElementwise("name: 'e' type: 'Exp' exp_param { scale: -1 shift: 0.3 }", x,
                    [](double v) { return std::exp(0.3 - v); });
}

TEST(ExpLayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -1, 1);
  CheckGradient("name: 'e' type: 'Exp'", &bottom);
  CheckGradient("name: 'e' type: 'Exp' exp_param { base: 3 scale: 0.5 shift: -1 }", &bottom);
}

TEST(ExpLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({2, 6});
  FillUniform(&input, -1, 1);
  ExpectInPlaceMatches("name: 'e' type: 'Exp' exp_param { base: 3 scale: 0.5 shift: -1 }", input);
}

TEST(ExpLayerTest, NonPositiveBaseIsAnError) {
  Blob bottom({3}), top;
  ExpectError([&] {
    ExpLayer(ParseLayer("name: 'e' type: 'Exp' exp_param { base: -2 }")).SetUp({&bottom}, {&top});
  }, "base");
}

// ---------------------------------------------------------------- Log

TEST(LogLayerTest, Forward) {
  const vector<float> x{0.1f, 0.5f, 1, 3};
  ExpectElementwise("name: 'l' type: 'Log'", x, [](double v) { return std::log(v); });
  ExpectElementwise("name: 'l' type: 'Log' log_param { base: 2 scale: 2 shift: 0.5 }", x,
                    [](double v) { return std::log2(0.5 + 2 * v); });
}

TEST(LogLayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, 0.5f, 2);
  CheckGradient("name: 'l' type: 'Log'", &bottom);
  CheckGradient("name: 'l' type: 'Log' log_param { base: 10 scale: 0.7 shift: 0.2 }", &bottom);
}

TEST(LogLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({3, 4});
  FillUniform(&input, 0.5f, 2);
  ExpectInPlaceMatches("name: 'l' type: 'Log' log_param { base: 2 scale: 0.7 shift: 0.2 }", input);
}

TEST(LogLayerTest, BadBaseIsAnError) {
  Blob bottom({3}), top;
  for (const char* base : {"0", "1", "-3"}) {
    ExpectError([&] {
      LogLayer(ParseLayer(string("name: 'l' type: 'Log' log_param { base: ") + base + " }"))
          .SetUp({&bottom}, {&top});
    }, "base");
  }
}

// ---------------------------------------------------------------- BNLL

TEST(BNLLLayerTest, ForwardIsStableForLargeInputs) {
  ExpectElementwise("name: 'b' type: 'BNLL'", {-100, -20, -1, 0, 0.5f, 20, 100},
                    [](double v) { return v > 0 ? v + std::log1p(std::exp(-v))
                                                : std::log1p(std::exp(v)); });
  const vector<float> y = Forward("name: 'b' type: 'BNLL'", {2}, {1000, -1000});
  EXPECT_FLOAT_EQ(y[0], 1000);
  EXPECT_EQ(y[1], 0);
}

TEST(BNLLLayerTest, BackwardIsSigmoid) {
  Blob bottom({5}), top;
  SetValues(&bottom, {-90, -3, 0, 2, 90});
  BNLLLayer layer(ParseLayer("name: 'b' type: 'BNLL'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  std::fill_n(top.mutable_cpu_diff(), 5, 2.f);
  layer.Backward(tops, {true}, bottoms);
  for (int i = 0; i < 5; ++i) {
    const double x = bottom.cpu_data()[i];
    const double expected = 2 / (1 + std::exp(-x));
    EXPECT_NEAR(bottom.cpu_diff()[i], expected, 1e-5 * std::max(1e-30, expected)) << x;
  }
}

TEST(BNLLLayerTest, Gradient) {
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -3, 3);
  CheckGradient("name: 'b' type: 'BNLL'", &bottom);
}

TEST(BNLLLayerTest, InPlaceMatchesOutOfPlace) {
  Blob input({3, 4});
  FillUniform(&input, -3, 3);
  ExpectInPlaceMatches("name: 'b' type: 'BNLL'", input);
}

// ---------------------------------------------------------------- Threshold

TEST(ThresholdLayerTest, Forward) {
  ExpectElementwise("name: 't' type: 'Threshold'", {-1, 0, 1e-6f, 2},
                    [](double v) { return v > 0 ? 1.0 : 0.0; });
  ExpectElementwise("name: 't' type: 'Threshold' threshold_param { threshold: 0.5 }",
                    {-1, 0.5f, 0.6f, 2}, [](double v) { return v > 0.5 ? 1.0 : 0.0; });
}

TEST(ThresholdLayerTest, BackwardIsZero) {
  Blob bottom({4}), top;
  SetValues(&bottom, {-1, 0.2f, 0.7f, 3});
  ThresholdLayer layer(ParseLayer("name: 't' type: 'Threshold'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  std::fill_n(top.mutable_cpu_diff(), 4, 1.f);
  std::fill_n(bottom.mutable_cpu_diff(), 4, 5.f);
  layer.Backward(tops, {true}, bottoms);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bottom.cpu_diff()[i], 0.f);
}

}  // namespace caffe
