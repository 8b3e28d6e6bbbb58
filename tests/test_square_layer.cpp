// Square (y = x * x), the example layer of docs/writing_a_layer.md: forward and
// backward values by hand, the top's shape, the in-place refusal (alone and in a net),
// and a finite-difference gradient check. The GPU path's tests are in
// test_gpu_square_layer.cpp (the test_gpu_* files make the GPU check's binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/square_layer.hpp"
#include "caffe/net.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char kSquare[] = "name: 'sq' type: 'Square' bottom: 'x' top: 'y'";

TEST(SquareLayerTest, ForwardMatchesHandValues) {
  Blob bottom({2, 3}), top;
  const float x[] = {-3, -0.5f, 0, 0.25f, 1, 7};
  std::copy(x, x + 6, bottom.mutable_cpu_data());
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(kSquare));
  EXPECT_STREQ(layer->type(), "Square");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3}));
  const float expected[] = {9, 0.25f, 0, 0.0625f, 1, 49};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]) << "element " << i;
}

TEST(SquareLayerTest, BackwardMatchesHandValues) {
  Blob bottom({4}), top;
  const float x[] = {-3, -0.5f, 0, 2};
  const float dy[] = {1, -2, 5, 0.5f};
  std::copy(x, x + 4, bottom.mutable_cpu_data());
  SquareLayer layer(ParseLayer(kSquare));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  std::copy(dy, dy + 4, top.mutable_cpu_diff());
  layer.Backward({&top}, {true}, {&bottom});
  const float expected[] = {-6, 2, 0, 2};  // 2 x dy
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], expected[i]) << "element " << i;
}

// A net that needs no gradient for this bottom passes propagate_down false; the diff
// must then be left as it was, since it may belong to another consumer.
TEST(SquareLayerTest, NoPropagateDownLeavesBottomDiff) {
  Blob bottom({3}), top;
  FillUniform(&bottom, -1, 1);
  SquareLayer layer(ParseLayer(kSquare));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  std::fill_n(top.mutable_cpu_diff(), 3, 1.f);
  std::fill_n(bottom.mutable_cpu_diff(), 3, 42.f);
  layer.Backward({&top}, {false}, {&bottom});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bottom.cpu_diff()[i], 42.f);
}

TEST(SquareLayerTest, TopFollowsBottomShape) {
  Blob bottom({2, 3, 4, 5}), top;
  SquareLayer layer(ParseLayer(kSquare));
  layer.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (vector<int64_t>{2, 3, 4, 5}));
  // Forward reshapes first, so a new bottom shape reaches the top on the next pass.
  bottom.Reshape({7});
  FillUniform(&bottom, -1, 1);
  layer.Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (vector<int64_t>{7}));
}

TEST(SquareLayerTest, InPlaceIsAnErrorNamingTheLayer) {
  Blob blob({2, 3});
  SquareLayer layer(ParseLayer("name: 'sq' type: 'Square' bottom: 'x' top: 'x'"));
  try {
    layer.SetUp({&blob}, {&blob});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "layer 'sq' (Square): cannot run in place (top 'x' is its bottom); "
              "give the top its own name");
  }
}

TEST(SquareLayerTest, InPlaceInANetIsAnError) {
  const NetParameter param = ParseNet(R"(
    layer { name: 'input' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'sq' type: 'Square' bottom: 'x' top: 'x' })");
  try {
    Net net(param, std::make_shared<Context>(), "net.prototxt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("net.prototxt"), std::string::npos) << what;
    EXPECT_NE(what.find("layer 'sq' (Square): cannot run in place (top 'x' is its bottom)"),
              std::string::npos)
        << what;
  }
}

TEST(SquareLayerTest, Gradient) {
  Blob bottom({2, 3, 4}), top;
  FillUniform(&bottom, -2, 2);
  SquareLayer layer(ParseLayer(kSquare));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 24);
}

}  // namespace
}  // namespace caffe
