#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/multinomial_logistic_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {
const char kProto[] = "name: 'm' type: 'MultinomialLogisticLoss'";
}  // namespace

TEST(MultinomialLogisticLossLayerTest, HandValues) {
  Blob p({2, 3}), labels({2}), top;
  const float probs[] = {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f};
  std::copy(probs, probs + 6, p.mutable_cpu_data());
  labels.mutable_cpu_data()[0] = 1;
  labels.mutable_cpu_data()[1] = 2;
  MultinomialLogisticLossLayer layer(ParseLayer(kProto));
  layer.SetUp({&p, &labels}, {&top});
  EXPECT_NEAR(layer.Forward({&p, &labels}, {&top}), -(std::log(0.5) + std::log(0.8)) / 2, 1e-6);
  layer.Backward({&top}, {true, false}, {&p, &labels});
  const float expected[] = {0, -1 / (2 * 0.5f), 0, 0, 0, -1 / (2 * 0.8f)};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(p.cpu_diff()[i], expected[i]) << i;
}

TEST(MultinomialLogisticLossLayerTest, ZeroProbabilityIsClamped) {
  Blob p({1, 2}), labels({1}), top;
  p.mutable_cpu_data()[0] = 0;
  p.mutable_cpu_data()[1] = 1;
  labels.mutable_cpu_data()[0] = 0;
  MultinomialLogisticLossLayer layer(ParseLayer(kProto));
  layer.SetUp({&p, &labels}, {&top});
  EXPECT_NEAR(layer.Forward({&p, &labels}, {&top}), -std::log(1e-20), 1e-3);
}

TEST(MultinomialLogisticLossLayerTest, Gradient) {
  Blob p({3, 5, 1, 1}), labels({3, 1, 1, 1}), top;
  FillUniform(&p, 0.3f, 1);
  const float l[] = {4, 0, 2};
  std::copy(l, l + 3, labels.mutable_cpu_data());
  MultinomialLogisticLossLayer layer(ParseLayer(kProto));
  GradientChecker checker(1e-2f, 2e-3f);
  checker.CheckGradient(&layer, {&p, &labels}, {&top}, 0);
  EXPECT_EQ(checker.checked(), 15);
}

TEST(MultinomialLogisticLossLayerTest, BadLabelsAreErrors) {
  Blob p({2, 3}), labels({2}), top;
  FillUniform(&p, 0.1f, 1);
  labels.mutable_cpu_data()[0] = 0;
  labels.mutable_cpu_data()[1] = 3;
  MultinomialLogisticLossLayer layer(ParseLayer(kProto));
  layer.SetUp({&p, &labels}, {&top});
  try {
    layer.Forward({&p, &labels}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'm'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("[0, 3)"), string::npos) << e.what();
  }
  Blob two_per_example({2, 2});
  EXPECT_THROW(layer.SetUp({&p, &two_per_example}, {&top}), Error);
}

}  // namespace caffe
