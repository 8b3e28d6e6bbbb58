#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/reduction_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char* const kOps[] = {"SUM", "ASUM", "SUMSQ", "MEAN"};

string Proto(const string& op, int axis, float coeff) {
  return "name: 'r' type: 'Reduction' reduction_param { operation: " + op +
         " axis: " + std::to_string(axis) + " coeff: " + std::to_string(coeff) + " }";
}

double Reduce(const string& op, const float* x, int64_t n) {
  double r = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (op == "ASUM") r += std::fabs(x[i]);
    else if (op == "SUMSQ") r += double(x[i]) * x[i];
    else r += x[i];
  }
  return op == "MEAN" ? r / n : r;
}

}  // namespace

TEST(ReductionLayerTest, HandValues) {
  Blob bottom({2, 2}), top;
  const float x[] = {1, -2, 3, -4};
  std::copy(x, x + 4, bottom.mutable_cpu_data());
  const float expected[][2] = {{-1, -1}, {3, 7}, {5, 25}, {-0.5f, -0.5f}};
  for (int op = 0; op < 4; ++op) {
    ReductionLayer layer(ParseLayer(Proto(kOps[op], 1, 1)));
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    ASSERT_EQ(top.shape(), vector<int64_t>{2});
    EXPECT_FLOAT_EQ(top.cpu_data()[0], expected[op][0]) << kOps[op];
    EXPECT_FLOAT_EQ(top.cpu_data()[1], expected[op][1]) << kOps[op];
  }
}

TEST(ReductionLayerTest, ForwardMatchesNaiveLoop) {
  Blob bottom({2, 3, 4}), top;
  FillUniform(&bottom, -1, 1);
  for (const char* op : kOps) {
    for (int axis : {0, 1, 2, -1}) {
      ReductionLayer layer(ParseLayer(Proto(op, axis, -0.5f)));
      layer.SetUp({&bottom}, {&top});
      layer.Forward({&bottom}, {&top});
      const int a = axis < 0 ? axis + 3 : axis;
      ASSERT_EQ(top.shape(), vector<int64_t>(bottom.shape().begin(), bottom.shape().begin() + a));
      const int64_t dim = bottom.count(a);
      for (int64_t i = 0; i < top.count(); ++i) {
        EXPECT_NEAR(top.cpu_data()[i], -0.5 * Reduce(op, bottom.cpu_data() + i * dim, dim), 1e-5)
            << op << " axis " << axis;
      }
    }
  }
}

TEST(ReductionLayerTest, Gradient) {
  for (const char* op : kOps) {
    for (int axis : {0, 1}) {
      Blob bottom({2, 3, 4}), top;
      FillUniform(&bottom, -1, 1);
      ReductionLayer layer(ParseLayer(Proto(op, axis, 1.5f)));
      GradientChecker checker(1e-2f, 1e-3f, 1701, 0.f, 0.02f);  // ASUM has a kink at 0
      checker.CheckGradient(&layer, {&bottom}, {&top});
      EXPECT_GT(checker.checked(), 20) << op;
    }
  }
}

TEST(ReductionLayerTest, AxisOutOfRangeIsAnError) {
  Blob bottom({2, 3}), top;
  ReductionLayer layer(ParseLayer(Proto("SUM", 2, 1)));
  try {
    layer.SetUp({&bottom}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'r'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("axis 2"), string::npos) << e.what();
  }
}

}  // namespace caffe
