#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "caffe/layers/eltwise_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

struct ThreeBottoms {
  ThreeBottoms() : a({2, 3, 4}), b({2, 3, 4}), c({2, 3, 4}) {
    FillUniform(&a, -1, 1, 1);
    FillUniform(&b, -1, 1, 2);
    FillUniform(&c, -1, 1, 3);
  }
  vector<Blob*> bottoms() { return {&a, &b, &c}; }
  Blob a, b, c;
};

}  // namespace

TEST(EltwiseLayerTest, SumWithCoefficients) {
  ThreeBottoms in;
  Blob top;
  EltwiseLayer layer(ParseLayer(
      "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 coeff: 2 }"));
  vector<Blob*> bottoms = in.bottoms(), tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 24; ++i) {
    EXPECT_NEAR(top.cpu_data()[i],
                in.a.cpu_data()[i] - 0.5f * in.b.cpu_data()[i] + 2 * in.c.cpu_data()[i], 1e-6);
  }
}

// Blobs of several L1 pieces and more than one thread's share, with a bottom that
// needs no gradient: every element of the sum and of each wanted diff, and the
// unwanted diff left as it was.
TEST(EltwiseLayerTest, SumOverManyPiecesAndSkippedBottom) {
  const int64_t count = 3 * 4096 + 4099;
  Blob a({count}), b({count}), c({count}), top;
  FillUniform(&a, -1, 1, 11);
  FillUniform(&b, -1, 1, 12);
  FillUniform(&c, -1, 1, 13);
  EltwiseLayer layer(ParseLayer(
      "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 0.5 coeff: -1 coeff: 3 }"));
  vector<Blob*> bottoms{&a, &b, &c}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_FLOAT_EQ(top.cpu_data()[i],
                    0.5f * a.cpu_data()[i] - b.cpu_data()[i] + 3 * c.cpu_data()[i]) << i;
  }
  FillUniform(&top, -1, 1, 14);
  std::copy(top.cpu_data(), top.cpu_data() + count, top.mutable_cpu_diff());
  std::fill(b.mutable_cpu_diff(), b.mutable_cpu_diff() + count, 7.f);
  layer.Backward(tops, {true, false, true}, bottoms);
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_EQ(a.cpu_diff()[i], 0.5f * top.cpu_diff()[i]) << i;
    ASSERT_EQ(b.cpu_diff()[i], 7.f) << i;
    ASSERT_EQ(c.cpu_diff()[i], 3 * top.cpu_diff()[i]) << i;
  }
}

TEST(EltwiseLayerTest, ProdAndMax) {
  ThreeBottoms in;
  Blob top;
  vector<Blob*> bottoms = in.bottoms(), tops{&top};
  EltwiseLayer prod(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }"));
  prod.SetUp(bottoms, tops);
  prod.Forward(bottoms, tops);
  for (int i = 0; i < 24; ++i) {
    EXPECT_FLOAT_EQ(top.cpu_data()[i],
                    in.a.cpu_data()[i] * in.b.cpu_data()[i] * in.c.cpu_data()[i]);
  }
  EltwiseLayer max(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }"));
  max.SetUp(bottoms, tops);
  max.Forward(bottoms, tops);
  std::fill_n(top.mutable_cpu_diff(), 24, 1.f);
  max.Backward(tops, {true, true, true}, bottoms);
  for (int i = 0; i < 24; ++i) {
    const float values[] = {in.a.cpu_data()[i], in.b.cpu_data()[i], in.c.cpu_data()[i]};
    const int argmax = int(std::max_element(values, values + 3) - values);
    EXPECT_EQ(top.cpu_data()[i], values[argmax]);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(bottoms[k]->cpu_diff()[i], k == argmax ? 1.f : 0.f);
  }
}

TEST(EltwiseLayerTest, GradientSum) {
  ThreeBottoms in;
  Blob top;
  EltwiseLayer layer(ParseLayer(
      "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 coeff: 2 }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, in.bottoms(), {&top});
  EXPECT_EQ(checker.checked(), 72);
}

TEST(EltwiseLayerTest, GradientProdStableAndUnstable) {
  for (bool stable : {true, false}) {
    ThreeBottoms in;
    Blob top;
    LayerParameter param = ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }");
    param.mutable_eltwise_param()->set_stable_prod_grad(stable);
    EltwiseLayer layer(param);
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, in.bottoms(), {&top});
    EXPECT_EQ(checker.checked(), 72);
  }
}

TEST(EltwiseLayerTest, StableProdGradientAtZero) {
  Blob a({1, 3}), b({1, 3});
  const float av[] = {0, 2, -1}, bv[] = {3, 0, 4};
  std::copy(av, av + 3, a.mutable_cpu_data());
  std::copy(bv, bv + 3, b.mutable_cpu_data());
  Blob top;
  EltwiseLayer layer(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }"));
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  std::fill_n(top.mutable_cpu_diff(), 3, 1.f);
  layer.Backward(tops, {true, true}, bottoms);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.cpu_diff()[i], bv[i]);
    EXPECT_EQ(b.cpu_diff()[i], av[i]);
  }
}

TEST(EltwiseLayerTest, GradientMax) {
  ThreeBottoms in;
  // The check perturbs by 1e-3: keep every pair of candidates further apart than that.
  for (int i = 0; i < 24; ++i) {
    const float x = in.a.cpu_data()[i];
    in.b.mutable_cpu_data()[i] = x + (i % 3 == 0 ? 0.3f : -0.2f);
    in.c.mutable_cpu_data()[i] = x + (i % 3 == 1 ? 0.5f : -0.1f);
  }
  Blob top;
  EltwiseLayer layer(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }"));
  GradientChecker checker(1e-3f, 1e-2f);
  checker.CheckGradient(&layer, in.bottoms(), {&top});
  EXPECT_EQ(checker.checked(), 72);
}

TEST(EltwiseLayerTest, ShapeMismatchNamesBothBottoms) {
  Blob a({2, 3}), b({3, 2});
  Blob top;
  EltwiseLayer layer(ParseLayer("name: 'e' type: 'Eltwise' bottom: 'left' bottom: 'right'"));
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'e'"), std::string::npos) << what;
    EXPECT_NE(what.find("'left' is 2x3"), std::string::npos) << what;
    EXPECT_NE(what.find("'right' is 3x2"), std::string::npos) << what;
  }
}

TEST(EltwiseLayerTest, WrongCoefficientCountIsAnError) {
  Blob a({2}), b({2});
  Blob top;
  EltwiseLayer layer(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { coeff: 1 }"));
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  EXPECT_THROW(layer.SetUp(bottoms, tops), Error);
}

}  // namespace caffe
