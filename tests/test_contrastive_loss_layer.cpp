#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "caffe/layers/contrastive_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Five pairs of 3-d embeddings with alternating similarity labels.
struct Pairs {
  Blob a{vector<int64_t>{5, 3, 1, 1}}, b{vector<int64_t>{5, 3, 1, 1}}, y{vector<int64_t>{5, 1, 1, 1}};
  Pairs() {
    FillUniform(&a, -0.6f, 0.6f, 11);
    FillUniform(&b, -0.6f, 0.6f, 12);
    for (int n = 0; n < 5; ++n) y.mutable_cpu_data()[n] = n % 2;
  }
  vector<Blob*> bottoms() { return {&a, &b, &y}; }
  double DistSq(int n) const {
    double d = 0;
    for (int k = 0; k < 3; ++k) {
      const double v = a.cpu_data()[n * 3 + k] - b.cpu_data()[n * 3 + k];
      d += v * v;
    }
    return d;
  }
};

double NaiveLoss(const Pairs& pairs, float margin, bool legacy) {
  double loss = 0;
  for (int n = 0; n < 5; ++n) {
    const double d2 = pairs.DistSq(n);
    if (pairs.y.cpu_data()[n] != 0) {
      loss += d2;
    } else if (legacy) {
      loss += std::max(margin - d2, 0.0);
    } else {
      loss += std::pow(std::max(margin - std::sqrt(d2), 0.0), 2);
    }
  }
  return loss / 10;
}

string Proto(float margin, bool legacy) {
  return "name: 'c' type: 'ContrastiveLoss' contrastive_loss_param { margin: " +
         std::to_string(margin) + (legacy ? " legacy_version: true }" : " }");
}

}  // namespace

TEST(ContrastiveLossLayerTest, ForwardMatchesNaiveLoop) {
  Pairs pairs;
  for (bool legacy : {false, true}) {
    for (float margin : {0.5f, 1.f}) {
      ContrastiveLossLayer layer(ParseLayer(Proto(margin, legacy)));
      Blob top;
      layer.SetUp(pairs.bottoms(), {&top});
      EXPECT_NEAR(layer.Forward(pairs.bottoms(), {&top}), NaiveLoss(pairs, margin, legacy), 1e-6)
          << "legacy " << legacy << " margin " << margin;
    }
  }
}

TEST(ContrastiveLossLayerTest, DissimilarPairsBeyondTheMarginCostNothing) {
  Blob a({1, 2}), b({1, 2}), y({1}), top;
  a.mutable_cpu_data()[0] = 3;  // distance 3 > margin 1
  ContrastiveLossLayer layer(ParseLayer("name: 'c' type: 'ContrastiveLoss'"));
  layer.SetUp({&a, &b, &y}, {&top});
  EXPECT_EQ(layer.Forward({&a, &b, &y}, {&top}), 0);
  y.mutable_cpu_data()[0] = 1;  // similar: d^2 / 2
  EXPECT_FLOAT_EQ(layer.Forward({&a, &b, &y}, {&top}), 4.5f);
}

TEST(ContrastiveLossLayerTest, Gradient) {
  for (bool legacy : {false, true}) {
    Pairs pairs;
    const float margin = 0.9f;  // some dissimilar pairs inside the margin, one outside
    // The dissimilar term has a kink where the distance meets the margin.
    for (int n = 0; n < 5; n += 2) {  // the dissimilar pairs
      const double d = legacy ? pairs.DistSq(n) : std::sqrt(pairs.DistSq(n));
      ASSERT_GT(std::fabs(d - margin), 0.05) << "pair " << n << " sits on the kink";
    }
    for (int side : {0, 1}) {
      ContrastiveLossLayer layer(ParseLayer(Proto(margin, legacy)));
      Blob top;
      GradientChecker checker(1e-3f, 1e-3f);
      checker.CheckGradient(&layer, pairs.bottoms(), {&top}, side);
      EXPECT_EQ(checker.checked(), 15);
    }
  }
}

TEST(ContrastiveLossLayerTest, BadShapesAreErrors) {
  Blob a({4, 3}), b({4, 2}), y({4}), top;
  ContrastiveLossLayer layer(ParseLayer("name: 'c' type: 'ContrastiveLoss'"));
  try {
    layer.SetUp({&a, &b, &y}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'c'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("same shape"), string::npos) << e.what();
  }
  Blob b_ok({4, 3}), y_bad({3});
  EXPECT_THROW(layer.SetUp({&a, &b_ok, &y_bad}, {&top}), Error);
  EXPECT_FALSE(layer.AllowForceBackward(2));
  EXPECT_TRUE(layer.AllowForceBackward(1));
}

}  // namespace caffe
