// The BatchReindex layer: items picked by index (repeats and omissions allowed),
// gradients summed back per item, none to the indices, and index errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_reindex_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char kReindex[] =
    "name: 'reindex' type: 'BatchReindex' bottom: 'data' bottom: 'order' top: 'picked'";

// The message of the caffe::Error `action` throws names the layer and has `fragment`.
template <typename Fn>
void ExpectError(Fn action, const std::string& fragment) {
  const std::string what = ErrorOf(action);
  EXPECT_NE(what.find("layer 'reindex' (BatchReindex)"), std::string::npos) << what;
  EXPECT_NE(what.find(fragment), std::string::npos) << what;
}

TEST(BatchReindexLayerTest, PicksItemsByIndex) {
  // Three items of 1 x 2 values; item 2 twice, item 0 once, item 1 once.
  Blob data({3, 1, 2}), order({4}), picked;
  SetValues(&data, {0, 1, 10, 11, 20, 21});
  SetValues(&order, {2, 0, 2, 1});
  BatchReindexLayer layer(ParseLayer(kReindex));
  vector<Blob*> bottoms{&data, &order}, tops{&picked};
  layer.SetUp(bottoms, tops);
  EXPECT_EQ(picked.shape(), (vector<int64_t>{4, 1, 2}));
  layer.Forward(bottoms, tops);
  ExpectExactValues(picked.cpu_data(), {20, 21, 0, 1, 20, 21, 10, 11}, "picked");

  // Fewer picks than items, and a new order on the next pass.
  order.Reshape({1});
  SetValues(&order, {1});
  layer.Forward(bottoms, tops);
  ASSERT_EQ(picked.shape(), (vector<int64_t>{1, 1, 2}));
  ExpectExactValues(picked.cpu_data(), {10, 11}, "picked again");
}

TEST(BatchReindexLayerTest, BackwardSumsTheGradientsOfRepeatedItems) {
  Blob data({3, 2}), order({4}), picked;
  FillUniform(&data, -1, 1);
  SetValues(&order, {2, 0, 2, 2});
  BatchReindexLayer layer(ParseLayer(kReindex));
  vector<Blob*> bottoms{&data, &order}, tops{&picked};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  float* dy = picked.mutable_cpu_diff();
  for (int i = 0; i < 8; ++i) dy[i] = static_cast<float>(1 << i);  // sums stay exact
  std::fill_n(data.mutable_cpu_diff(), data.count(), 5.f);         // stale values are replaced
  layer.Backward(tops, {true, false}, bottoms);
  // Item 0 from pick 1; item 1 picked by none; item 2 from picks 0, 2 and 3.
  ExpectExactValues(data.cpu_diff(), {4, 8, 0, 0, 1 + 16 + 64, 2 + 32 + 128}, "data gradient");
}

TEST(BatchReindexLayerTest, Gradient) {
  Blob data({4, 2, 3}), order({6}), picked;
  FillUniform(&data, -1, 1);
  SetValues(&order, {3, 1, 1, 0, 3, 3});
  BatchReindexLayer layer(ParseLayer(kReindex));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&data, &order}, {&picked}, 0);
  EXPECT_EQ(checker.checked(), data.count());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(data.cpu_diff()[2 * 6 + i], 0.f) << "item 2, " << i;
}

TEST(BatchReindexLayerTest, NoPicksMakeAnEmptyTop) {
  Blob data({2, 3}), order(vector<int64_t>{0}), picked;
  FillUniform(&data, -1, 1);
  BatchReindexLayer layer(ParseLayer(kReindex));
  vector<Blob*> bottoms{&data, &order}, tops{&picked};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  EXPECT_EQ(picked.shape(), (vector<int64_t>{0, 3}));
  layer.Backward(tops, {true, false}, bottoms);
  ExpectExactValues(data.cpu_diff(), {0, 0, 0, 0, 0, 0}, "data gradient");
}

TEST(BatchReindexLayerTest, IndexOutsideTheBatchIsAnError) {
  Blob data({3, 2}), order({2}), picked;
  vector<Blob*> bottoms{&data, &order}, tops{&picked};
  const std::pair<float, const char*> cases[] = {
      {3.f, "element 1 is 3;"}, {-1.f, "element 1 is -1;"}, {1.5f, "element 1 is 1.5;"}};
  for (const auto& [bad, named] : cases) {
    SCOPED_TRACE(named);
    BatchReindexLayer layer(ParseLayer(kReindex));
    SetValues(&order, {0, bad});
    layer.SetUp(bottoms, tops);
    ExpectError([&] { layer.Forward(bottoms, tops); }, named);
    ExpectError([&] { layer.Forward(bottoms, tops); },
                "expected an integer index in [0, 3) (the items of bottom 'data')");
  }
}

TEST(BatchReindexLayerTest, TheIndicesTakeNoGradient) {
  Blob data({2, 2}), order({2}), picked;
  SetValues(&order, {1, 0});
  BatchReindexLayer layer(ParseLayer(kReindex));
  vector<Blob*> bottoms{&data, &order}, tops{&picked};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  EXPECT_TRUE(layer.AllowForceBackward(0));
  EXPECT_FALSE(layer.AllowForceBackward(1));
  ExpectError(
      [&] {
        layer.Backward(tops, {true, true}, bottoms);
      },
      "cannot backpropagate to the index bottom 'order'");
}

TEST(BatchReindexLayerTest, ShapeErrors) {
  Blob data({3, 2}), order({2, 1}), picked;
  Blob scalar(vector<int64_t>{});
  {
    BatchReindexLayer layer(ParseLayer(kReindex));
    vector<Blob*> bottoms{&data, &order}, tops{&picked};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "index bottom 'order' has shape 2x1");
  }
  {
    Blob flat_order({2});
    BatchReindexLayer layer(ParseLayer(kReindex));
    vector<Blob*> bottoms{&scalar, &flat_order}, tops{&picked};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "data bottom 'data' is a scalar");
  }
  {
    Blob flat_order({2});
    BatchReindexLayer layer(ParseLayer(kReindex));
    vector<Blob*> bottoms{&data, &flat_order}, tops{&data};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "cannot run in place");
  }
}

TEST(BatchReindexLayerTest, RegisteredAsBatchReindex) {
  auto layer = LayerRegistry::CreateLayer(ParseLayer(kReindex));
  EXPECT_STREQ(layer->type(), "BatchReindex");
}

}  // namespace
}  // namespace caffe
