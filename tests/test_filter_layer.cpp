// The Filter layer: the items a selector picks, in order; the whole batch at setup;
// gradients back to the kept items only; none to the selector; shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/filter_layer.hpp"
#include "caffe/net.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char kFilter[] =
    "name: 'filter' type: 'Filter' bottom: 'data' bottom: 'labels' bottom: 'selector' "
    "top: 'kept_data' top: 'kept_labels'";

// The message of the caffe::Error `action` throws names the layer and has `fragment`.
template <typename Fn>
void ExpectError(Fn action, const std::string& fragment) {
  const std::string what = ErrorOf(action);
  EXPECT_NE(what.find("layer 'filter' (Filter)"), std::string::npos) << what;
  EXPECT_NE(what.find(fragment), std::string::npos) << what;
}

TEST(FilterLayerTest, KeepsTheSelectedItemsInOrder) {
  // Four items of 2 x 1 values, and a label per item; items 1 and 3 are selected (any
  // nonzero value selects).
  Blob data({4, 2, 1}), labels({4}), selector({4, 1}), kept_data, kept_labels;
  SetValues(&data, {0, 1, 10, 11, 20, 21, 30, 31});
  SetValues(&labels, {5, 6, 7, 8});
  SetValues(&selector, {0, 1, 0, -2.5f});
  FilterLayer layer(ParseLayer(kFilter));
  vector<Blob*> bottoms{&data, &labels, &selector}, tops{&kept_data, &kept_labels};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(kept_data.shape(), (vector<int64_t>{2, 2, 1}));
  ASSERT_EQ(kept_labels.shape(), vector<int64_t>{2});
  ExpectExactValues(kept_data.cpu_data(), {10, 11, 30, 31}, "kept data");
  ExpectExactValues(kept_labels.cpu_data(), {6, 8}, "kept labels");
  EXPECT_EQ(layer.kept_items(), (vector<int64_t>{1, 3}));
}

TEST(FilterLayerTest, SetUpSizesTheTopsForTheWholeBatch) {
  // While a net is built the selector holds no values yet: the first Reshape keeps
  // every item, as BVLC's does, and Forward then keeps the selected ones.
  Blob data({3, 2}), selector({3}), kept;
  SetValues(&data, {1, 2, 3, 4, 5, 6});
  SetValues(&selector, {0, 0, 1});
  FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
  vector<Blob*> bottoms{&data, &selector}, tops{&kept};
  layer.SetUp(bottoms, tops);
  EXPECT_EQ(kept.shape(), (vector<int64_t>{3, 2}));
  layer.Forward(bottoms, tops);
  ASSERT_EQ(kept.shape(), (vector<int64_t>{1, 2}));
  ExpectExactValues(kept.cpu_data(), {5, 6}, "kept");
}

TEST(FilterLayerTest, EachForwardFollowsTheSelector) {
  Blob data({3, 2}), selector({3}), kept;
  SetValues(&data, {1, 2, 3, 4, 5, 6});
  SetValues(&selector, {1, 1, 1});
  FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
  vector<Blob*> bottoms{&data, &selector}, tops{&kept};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(kept.shape(), (vector<int64_t>{3, 2}));
  ExpectExactValues(kept.cpu_data(), {1, 2, 3, 4, 5, 6}, "all kept");

  SetValues(&selector, {1, 0, 0});
  layer.Forward(bottoms, tops);
  ASSERT_EQ(kept.shape(), (vector<int64_t>{1, 2}));
  ExpectExactValues(kept.cpu_data(), {1, 2}, "first kept");

  // Nothing selected: a top of no items, and every gradient 0.
  SetValues(&selector, {0, 0, 0});
  layer.Forward(bottoms, tops);
  EXPECT_EQ(kept.shape(), (vector<int64_t>{0, 2}));
  EXPECT_EQ(kept.count(), 0);
  std::fill_n(data.mutable_cpu_diff(), data.count(), 7.f);
  layer.Backward(tops, {true, false}, bottoms);
  ExpectExactValues(data.cpu_diff(), {0, 0, 0, 0, 0, 0}, "gradient with nothing kept");
}

TEST(FilterLayerTest, BackwardPutsEachGradientBackInItsItem) {
  Blob data({4, 2}), selector({4}), kept;
  FillUniform(&data, -1, 1);
  SetValues(&selector, {1, 0, 1, 0});
  FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
  vector<Blob*> bottoms{&data, &selector}, tops{&kept};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  float* dy = kept.mutable_cpu_diff();
  for (int i = 0; i < 4; ++i) dy[i] = static_cast<float>(i + 1);
  std::fill_n(data.mutable_cpu_diff(), data.count(), 9.f);  // stale values are replaced
  layer.Backward(tops, {true, false}, bottoms);
  ExpectExactValues(data.cpu_diff(), {1, 2, 0, 0, 3, 4, 0, 0}, "data gradient");
}

TEST(FilterLayerTest, Gradient) {
  Blob data({5, 2, 3}), labels({5, 1}), selector({5}), kept_data, kept_labels;
  FillUniform(&data, -1, 1, 1);
  FillUniform(&labels, -1, 1, 2);
  SetValues(&selector, {1, 0, 1, 1, 0});
  for (int bottom = 0; bottom < 2; ++bottom) {
    FilterLayer layer(ParseLayer(kFilter));
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&data, &labels, &selector}, {&kept_data, &kept_labels}, bottom);
    EXPECT_EQ(checker.checked(), bottom == 0 ? data.count() : labels.count());
  }
  // The items filtered out have no gradient.
  for (int i = 0; i < 6; ++i) EXPECT_EQ(data.cpu_diff()[6 + i], 0.f) << i;
  EXPECT_EQ(labels.cpu_diff()[4], 0.f);
}

TEST(FilterLayerTest, TheSelectorTakesNoGradient) {
  Blob data({2, 3}), selector({2}), kept;
  SetValues(&selector, {1, 1});
  FilterLayer layer(
      ParseLayer("name: 'filter' type: 'Filter' bottom: 'data' bottom: 'selector' top: 'kept'"));
  vector<Blob*> bottoms{&data, &selector}, tops{&kept};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  EXPECT_FALSE(layer.AllowForceBackward(1));
  EXPECT_TRUE(layer.AllowForceBackward(0));
  ExpectError(
      [&] {
        layer.Backward(tops, {true, true}, bottoms);
      },
      "cannot backpropagate to the selector bottom 'selector'");
}

// In a net with force_backward the selector is left out of backward (its producer, an
// Input, gets no gradient), and the tops shrink from the whole batch at setup to the
// selected items at Forward.
TEST(FilterLayerTest, TrainsInANet) {
  NetParameter param = ParseNet(R"(
    force_backward: true
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 3 } } }
    layer { name: 's' type: 'Input' top: 's' input_param { shape { dim: 4 } } }
    layer { name: 'filter' type: 'Filter' bottom: 'x' bottom: 's' top: 'kept' }
    layer { name: 'sum' type: 'Reduction' bottom: 'kept' top: 'sum' loss_weight: 1 }
  )");
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, std::make_shared<Context>(), "net.prototxt");
  EXPECT_EQ(net.blob_by_name("kept")->shape(), (vector<int64_t>{4, 3}));
  Blob& x = *net.blob_by_name("x");
  for (int i = 0; i < 12; ++i) x.mutable_cpu_data()[i] = static_cast<float>(i);
  SetValues(net.blob_by_name("s").get(), {1, 0, 0, 1});
  const float loss = net.ForwardBackward();
  EXPECT_EQ(net.blob_by_name("kept")->shape(), (vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ(loss, 0 + 1 + 2 + 9 + 10 + 11);
  ExpectExactValues(x.cpu_diff(), {1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1}, "x gradient");
}

TEST(FilterLayerTest, ShapeErrors) {
  Blob data({4, 3}), short_data({3, 3}), selector({4}), wide_selector({4, 2}), kept;
  Blob scalar(vector<int64_t>{});
  SetValues(&selector, {1, 0, 1, 0});
  {
    FilterLayer layer(
        ParseLayer("name: 'filter' type: 'Filter' bottom: 'data' bottom: 'selector' top: 'kept'"));
    vector<Blob*> bottoms{&short_data, &selector}, tops{&kept};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "bottom 'data' has shape 3x3");
  }
  {
    FilterLayer layer(
        ParseLayer("name: 'filter' type: 'Filter' bottom: 'data' bottom: 'selector' top: 'kept'"));
    vector<Blob*> bottoms{&data, &wide_selector}, tops{&kept};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "one value per item");
  }
  {
    FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
    vector<Blob*> bottoms{&data, &scalar}, tops{&kept};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "is a scalar");
  }
  {
    // One top per data bottom.
    Blob extra;
    FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
    vector<Blob*> bottoms{&data, &selector}, tops{&kept, &extra};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "expected one top per data bottom (1");
  }
  {
    FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
    vector<Blob*> bottoms{&data, &selector}, tops{&data};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "cannot run in place");
  }
  {
    FilterLayer layer(ParseLayer("name: 'filter' type: 'Filter'"));
    vector<Blob*> bottoms{&selector}, tops{&kept};
    ExpectError([&] { layer.SetUp(bottoms, tops); }, "at least 2 bottom");
  }
}

TEST(FilterLayerTest, RegisteredAsFilter) {
  auto layer = LayerRegistry::CreateLayer(ParseLayer("name: 'filter' type: 'Filter'"));
  EXPECT_STREQ(layer->type(), "Filter");
}

}  // namespace
}  // namespace caffe
