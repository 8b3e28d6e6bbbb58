#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/euclidean_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(EuclideanLossLayerTest, ForwardAndBackwardMatchHandValues) {
  Blob a({2, 2}), b({2, 2}), top;
  const float av[] = {1, 2, 3, 4}, bv[] = {0, 2, 1, 1};
  std::copy(av, av + 4, a.mutable_cpu_data());
  std::copy(bv, bv + 4, b.mutable_cpu_data());
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(
      ParseLayer("name: 'l2' type: 'EuclideanLoss' loss_weight: 2"));
  EXPECT_STREQ(layer->type(), "EuclideanLoss");
  layer->SetUp({&a, &b}, {&top});
  // Differences 1, 0, 2, 3: (1 + 0 + 4 + 9) / (2 * 2) = 3.5, weighted by 2.
  const float objective = layer->Forward({&a, &b}, {&top});
  EXPECT_FLOAT_EQ(top.cpu_data()[0], 3.5f);
  EXPECT_FLOAT_EQ(objective, 7.f);
  layer->Backward({&top}, {true, true}, {&a, &b});
  const float diff[] = {1, 0, 2, 3};
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(a.cpu_diff()[i], 2 * diff[i] / 2);
    EXPECT_FLOAT_EQ(b.cpu_diff()[i], -2 * diff[i] / 2);
  }
}

TEST(EuclideanLossLayerTest, GradientToBothBottoms) {
  Blob a({3, 2, 2}), b({3, 4}), top;
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  EuclideanLossLayer layer(ParseLayer("name: 'l2' type: 'EuclideanLoss'"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&a, &b}, {&top});
  EXPECT_EQ(checker.checked(), 24);
}

TEST(EuclideanLossLayerTest, MismatchedSizesAreAnError) {
  Blob a({2, 3}), b({2, 4}), top;
  EuclideanLossLayer layer(ParseLayer("name: 'l2' type: 'EuclideanLoss'"));
  try {
    layer.SetUp({&a, &b}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'l2'"), std::string::npos) << e.what();
  }
  Blob c({3, 3});
  EXPECT_THROW(layer.SetUp({&a, &c}, {&top}), Error);
}

}  // namespace caffe
