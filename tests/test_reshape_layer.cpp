#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/reshape_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Reshapes a 2 x 3 x 4 x 5 bottom with the given reshape_param body.
vector<int64_t> ReshapedShape(const std::string& reshape_param) {
  Blob bottom({2, 3, 4, 5}), top;
  ReshapeLayer layer(
      ParseLayer("name: 'r' type: 'Reshape' reshape_param { " + reshape_param + " }"));
  layer.SetUp({&bottom}, {&top});
  return top.shape();
}

void ExpectError(const std::string& reshape_param, const std::string& fragment) {
  Blob bottom({2, 3, 4, 5}), top;
  ReshapeLayer layer(
      ParseLayer("name: 'r' type: 'Reshape' reshape_param { " + reshape_param + " }"));
  try {
    layer.SetUp({&bottom}, {&top});
    ADD_FAILURE() << "expected an error for " << reshape_param;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'r'"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

}  // namespace

TEST(ReshapeLayerTest, ExplicitCopiedAndInferredDims) {
  EXPECT_EQ(ReshapedShape("shape { dim: 6 dim: 20 }"), (vector<int64_t>{6, 20}));
  EXPECT_EQ(ReshapedShape("shape { dim: 0 dim: -1 }"), (vector<int64_t>{2, 60}));
  EXPECT_EQ(ReshapedShape("shape { dim: -1 dim: 0 dim: 2 }"), (vector<int64_t>{20, 3, 2}));
  EXPECT_EQ(ReshapedShape("shape { dim: 0 dim: 0 dim: 0 dim: 0 }"),
            (vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ReshapedShape("shape { dim: 0 dim: 1 dim: -1 dim: 1 }"),
            (vector<int64_t>{2, 1, 60, 1}));
  EXPECT_EQ(ReshapedShape("shape { dim: -1 }"), (vector<int64_t>{120}));
}

TEST(ReshapeLayerTest, AxisAndNumAxesSelectTheReplacedRange) {
  // Insert a leading or trailing axis of 1.
  EXPECT_EQ(ReshapedShape("axis: 0 num_axes: 0 shape { dim: 1 }"),
            (vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(ReshapedShape("axis: -1 num_axes: 0 shape { dim: 1 }"),
            (vector<int64_t>{2, 3, 4, 5, 1}));
  EXPECT_EQ(ReshapedShape("axis: 2 num_axes: 0 shape { dim: 1 }"),
            (vector<int64_t>{2, 3, 1, 4, 5}));
  // Replace axes 1..2 (3 x 4) only.
  EXPECT_EQ(ReshapedShape("axis: 1 num_axes: 2 shape { dim: -1 }"), (vector<int64_t>{2, 12, 5}));
  EXPECT_EQ(ReshapedShape("axis: 1 num_axes: 2 shape { dim: 2 dim: 3 dim: 2 }"),
            (vector<int64_t>{2, 2, 3, 2, 5}));
  // Replace everything from axis 2 on; the 0 copies the bottom's axis 2.
  EXPECT_EQ(ReshapedShape("axis: 2 shape { dim: 0 dim: -1 dim: 1 }"),
            (vector<int64_t>{2, 3, 4, 5, 1}));
  // A negative axis counts from the end: -2 starts just before the last axis.
  EXPECT_EQ(ReshapedShape("axis: -2 shape { dim: -1 dim: 5 }"),
            (vector<int64_t>{2, 3, 4, 1, 5}));
}

TEST(ReshapeLayerTest, SharesDataAndDiffAndFollowsTheBottom) {
  Blob bottom({2, 3, 4}), top;
  FillUniform(&bottom, -1, 1);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(
      ParseLayer("name: 'r' type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 } }"));
  EXPECT_STREQ(layer->type(), "Reshape");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (vector<int64_t>{2, 12}));
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(top.cpu_diff(), bottom.cpu_diff());
  // A new batch size is picked up on the next pass.
  bottom.Reshape({5, 3, 4});
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (vector<int64_t>{5, 12}));
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
}

TEST(ReshapeLayerTest, Gradient) {
  Blob bottom({2, 3, 2}), top;
  FillUniform(&bottom, -1, 1);
  ReshapeLayer layer(
      ParseLayer("name: 'r' type: 'Reshape' reshape_param { shape { dim: 3 dim: -1 } }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 12);
}

TEST(ReshapeLayerTest, Errors) {
  ExpectError("shape { dim: -1 dim: -1 }", "more than one -1");
  ExpectError("shape { dim: 2 dim: 61 }", "122 elements");
  ExpectError("shape { dim: 7 dim: -1 }", "cannot infer");
  ExpectError("shape { dim: -2 }", "-2");
  ExpectError("axis: 3 shape { dim: 0 dim: 0 }", "no axis there to copy");
  ExpectError("axis: 5 shape { dim: 1 }", "out of range");
  ExpectError("axis: 2 num_axes: 3 shape { dim: 1 }", "goes past");
  ReshapeLayer layer(ParseLayer("name: 'r' type: 'Reshape' reshape_param { shape { dim: -1 } }"));
  Blob bottom({2});
  EXPECT_THROW(layer.SetUp({&bottom}, {&bottom}), Error);
}

}  // namespace caffe
