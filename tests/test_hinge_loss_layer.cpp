#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/hinge_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(HingeLossLayerTest, HandValues) {
  Blob x({2, 3}), labels({2}), top;
  const float scores[] = {0.5f, -2, 0.2f, 1.5f, 3, -0.5f};
  std::copy(scores, scores + 6, x.mutable_cpu_data());
  labels.mutable_cpu_data()[0] = 0;
  labels.mutable_cpu_data()[1] = 1;
  // Margins: example 0: 1-0.5, 1-2 -> 0, 1+0.2; example 1: 1+1.5, 1-3 -> 0, 1-0.5.
  const double margins[] = {0.5, 0, 1.2, 2.5, 0, 0.5};
  double l1 = 0, l2 = 0;
  for (double m : margins) {
    l1 += m;
    l2 += m * m;
  }
  HingeLossLayer layer_l1(ParseLayer("name: 'h' type: 'HingeLoss'"));
  layer_l1.SetUp({&x, &labels}, {&top});
  EXPECT_NEAR(layer_l1.Forward({&x, &labels}, {&top}), l1 / 2, 1e-6);
  layer_l1.Backward({&top}, {true, false}, {&x, &labels});
  const float d1[] = {-0.5f, 0, 0.5f, 0.5f, 0, 0.5f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(x.cpu_diff()[i], d1[i]) << i;

  HingeLossLayer layer_l2(ParseLayer("name: 'h' type: 'HingeLoss' hinge_loss_param { norm: L2 }"));
  layer_l2.SetUp({&x, &labels}, {&top});
  EXPECT_NEAR(layer_l2.Forward({&x, &labels}, {&top}), l2 / 2, 1e-5);
}

TEST(HingeLossLayerTest, Gradient) {
  for (const char* proto : {"name: 'h' type: 'HingeLoss'",
                            "name: 'h' type: 'HingeLoss' hinge_loss_param { norm: L2 }"}) {
    Blob x({4, 5}), labels({4}), top;
    FillUniform(&x, -3, 3);
    // Keep scores away from the kinks at |x| = 1.
    float* s = x.mutable_cpu_data();
    for (int i = 0; i < x.count(); ++i) {
      if (std::fabs(std::fabs(s[i]) - 1) < 0.05f) s[i] *= 1.2f;
    }
    const float l[] = {0, 4, 2, 2};
    std::copy(l, l + 4, labels.mutable_cpu_data());
    HingeLossLayer layer(ParseLayer(proto));
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&x, &labels}, {&top}, 0);
    EXPECT_EQ(checker.checked(), 20) << proto;
  }
}

TEST(HingeLossLayerTest, BadLabelsAreErrors) {
  Blob x({2, 3}), labels({2}), top;
  labels.mutable_cpu_data()[0] = -1;
  HingeLossLayer layer(ParseLayer("name: 'h' type: 'HingeLoss'"));
  layer.SetUp({&x, &labels}, {&top});
  try {
    layer.Forward({&x, &labels}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'h'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("example 0"), string::npos) << e.what();
  }
  Blob wrong({3});
  EXPECT_THROW(layer.SetUp({&x, &wrong}, {&top}), Error);
}

}  // namespace caffe
