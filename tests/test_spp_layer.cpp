// The SPP layer: top shapes, literal MAX / AVE / STOCHASTIC pyramids and their layout
// (levels in order, channels within a level), one level unflattened, gradients summed
// over the levels, a new H x W between passes, and the errors for bottoms the pyramid
// does not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/spp_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

LayerParameter SppParam(const std::string& spp_fields, const std::string& extra = "") {
  return ParseLayer("name: 'spp' type: 'SPP' bottom: 'image' top: 'pyramid' spp_param { " +
                    spp_fields + " } " + extra);
}

void FillCounting(Blob* blob) {
  for (int64_t i = 0; i < blob->count(); ++i) blob->mutable_cpu_data()[i] = float(i);
}

void ExpectValues(const Blob& blob, const vector<float>& expected) {
  ASSERT_EQ(blob.count(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_FLOAT_EQ(blob.cpu_data()[i], expected[i]) << "element " << i;
  }
}

// Sets up and runs the layer forward on `image`, returning the layer for more passes.
shared_ptr<Layer> RunForward(const LayerParameter& param, Blob* image, Blob* pyramid) {
  auto layer = LayerRegistry::CreateLayer(param);
  vector<Blob*> bottoms{image}, tops{pyramid};
  layer->SetUp(bottoms, tops);
  layer->Forward(bottoms, tops);
  return layer;
}

// The message of the caffe::Error that SetUp throws names the layer and has `fragment`.
void ExpectSetUpError(const LayerParameter& param, const vector<int64_t>& shape,
                      const std::string& fragment) {
  SCOPED_TRACE(param.ShortDebugString());
  Blob image(shape), pyramid;
  SPPLayer layer(param);
  vector<Blob*> bottoms{&image}, tops{&pyramid};
  const std::string what = ErrorOf([&] { layer.SetUp(bottoms, tops); });
  EXPECT_NE(what.find("layer 'spp' (SPP)"), std::string::npos) << what;
  EXPECT_NE(what.find(fragment), std::string::npos) << what;
}

TEST(SPPLayerTest, TopHasEveryLevelsBinsPerChannel) {
  // C (1 + 4 + 16) values per item for three levels, whatever H and W.
  for (const vector<int64_t>& shape :
       {vector<int64_t>{2, 3, 9, 8}, vector<int64_t>{10, 3, 7, 7}, vector<int64_t>{1, 2, 64, 33}}) {
    Blob image(shape), pyramid;
    FillUniform(&image, -1, 1);
    SPPLayer layer(SppParam("pyramid_height: 3"));
    vector<Blob*> bottoms{&image}, tops{&pyramid};
    layer.SetUp(bottoms, tops);
    EXPECT_EQ(pyramid.shape(), (vector<int64_t>{shape[0], shape[1] * 21})) << ShapeToString(shape);
  }
}

TEST(SPPLayerTest, MaxPyramidLayout) {
  // Channel 0 counts 0..15 over the 4 x 4 plane, channel 1 counts down from 100.
  Blob image({1, 2, 4, 4}), pyramid;
  for (int i = 0; i < 16; ++i) {
    image.mutable_cpu_data()[i] = float(i);
    image.mutable_cpu_data()[16 + i] = float(100 - i);
  }
  RunForward(SppParam("pyramid_height: 2 pool: MAX"), &image, &pyramid);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{1, 10}));
  // Level 0: one bin per channel; level 1: channel 0's four quadrants (row-major), then
  // channel 1's.
  ExpectValues(pyramid, {15, 100, 5, 7, 13, 15, 100, 98, 92, 90});
}

TEST(SPPLayerTest, AveragePyramidWithPadding) {
  // 1 2 3
  // 4 5 6
  // 7 8 9: level 1 splits 3 into 2 bins of 2 with one row (column) of padding in front,
  // and AVE counts the padding in the divisor, as Pooling does.
  Blob image({1, 1, 3, 3}), pyramid;
  for (int i = 0; i < 9; ++i) image.mutable_cpu_data()[i] = float(i + 1);
  RunForward(SppParam("pyramid_height: 2 pool: AVE engine: CAFFE"), &image, &pyramid);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{1, 5}));
  ExpectValues(pyramid, {5, 1 / 4.f, (2 + 3) / 4.f, (4 + 7) / 4.f, (5 + 6 + 8 + 9) / 4.f});
}

TEST(SPPLayerTest, StochasticInTestIsTheActivationWeightedAverage) {
  Blob image({1, 1, 4, 4}), pyramid;
  for (int i = 0; i < 16; ++i) image.mutable_cpu_data()[i] = float(i + 1);
  RunForward(SppParam("pyramid_height: 2 pool: STOCHASTIC", "phase: TEST"), &image, &pyramid);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{1, 5}));
  // sum x^2 / sum x: over 1..16, and over the top-left quadrant 1, 2, 5, 6.
  EXPECT_NEAR(pyramid.cpu_data()[0], 1496.0 / 136.0, 1e-5);
  EXPECT_NEAR(pyramid.cpu_data()[1], 66.0 / 14.0, 1e-5);
}

TEST(SPPLayerTest, OneLevelIsGlobalPoolingUnflattened) {
  // BVLC's SPP with pyramid_height 1 is a global pooling with the N x C x 1 x 1 top.
  Blob image({2, 3, 5, 4}), pyramid;
  FillUniform(&image, -1, 1);
  RunForward(SppParam("pyramid_height: 1"), &image, &pyramid);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{2, 3, 1, 1}));
  for (int plane = 0; plane < 6; ++plane) {
    const float* x = image.cpu_data() + plane * 20;
    EXPECT_EQ(pyramid.cpu_data()[plane], *std::max_element(x, x + 20)) << plane;
  }
}

TEST(SPPLayerTest, BackwardSumsTheLevels) {
  // 1 2
  // 3 4: level 0 takes the 4, level 1 each input alone.
  Blob image({1, 1, 2, 2}), pyramid;
  for (int i = 0; i < 4; ++i) image.mutable_cpu_data()[i] = float(i + 1);
  auto layer = RunForward(SppParam("pyramid_height: 2"), &image, &pyramid);
  ExpectValues(pyramid, {4, 1, 2, 3, 4});
  const vector<float> dy{1, 10, 20, 30, 40};
  std::copy(dy.begin(), dy.end(), pyramid.mutable_cpu_diff());
  vector<Blob*> bottoms{&image}, tops{&pyramid};
  layer->Backward(tops, {true}, bottoms);
  const vector<float> expected{10, 20, 30, 40 + 1};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(image.cpu_diff()[i], expected[i]) << i;
}

TEST(SPPLayerTest, Gradient) {
  // 7 x 6 with three levels: padded windows on both axes at level 2, and on H at level 1.
  for (const char* pool : {"MAX", "AVE"}) {
    SCOPED_TRACE(pool);
    Blob image({2, 2, 7, 6}), pyramid;
    FillDistinct(&image, 3);
    SPPLayer layer(SppParam(std::string("pyramid_height: 3 pool: ") + pool));
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&image}, {&pyramid});
    EXPECT_EQ(checker.checked(), image.count());
    EXPECT_EQ(pyramid.shape(), (vector<int64_t>{2, 2 * 21}));
  }
}

TEST(SPPLayerTest, FollowsANewImageSize) {
  Blob image({1, 1, 4, 4}), pyramid;
  FillCounting(&image);
  auto layer = RunForward(SppParam("pyramid_height: 2"), &image, &pyramid);
  ExpectValues(pyramid, {15, 5, 7, 13, 15});
  // 8 x 8 counting 0..63: the windows are rebuilt for the new size.
  image.Reshape({1, 1, 8, 8});
  FillCounting(&image);
  vector<Blob*> bottoms{&image}, tops{&pyramid};
  layer->Forward(bottoms, tops);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{1, 5}));
  ExpectValues(pyramid, {63, 27, 31, 59, 63});
  // A new batch size alone keeps the pieces.
  image.Reshape({3, 1, 8, 8});
  FillCounting(&image);
  layer->Forward(bottoms, tops);
  ASSERT_EQ(pyramid.shape(), (vector<int64_t>{3, 5}));
  for (int n = 0; n < 3; ++n) EXPECT_EQ(pyramid.cpu_data()[n * 5], 64 * n + 63) << n;
}

TEST(SPPLayerTest, Errors) {
  // Level 2 of a side of 5: 4 bins of 2 need 3 more inputs, 2 of them as front padding.
  ExpectSetUpError(SppParam("pyramid_height: 3"), {1, 1, 5, 5},
                   "pyramid_height 3 is too tall for bottom 'image' of shape 1x1x5x5: level 2 "
                   "splits its height of 5 into 4 bins");
  ExpectSetUpError(SppParam("pyramid_height: 3 pool: STOCHASTIC"), {1, 1, 6, 8}, "multiples of 4");
  ExpectSetUpError(SppParam("pool: MAX"), {1, 1, 4, 4}, "(it is not set)");
  ExpectSetUpError(SppParam("pyramid_height: 40"), {1, 1, 4, 4}, "between 1 and 31");
  ExpectSetUpError(SppParam("pyramid_height: 2"), {2, 16}, "must be 4-d");
  ExpectSetUpError(SppParam("pyramid_height: 2"), {1, 1, 0, 4}, "needs H and W between 1");
}

TEST(SPPLayerTest, RegisteredAsSPP) {
  auto layer = LayerRegistry::CreateLayer(SppParam("pyramid_height: 2"));
  EXPECT_STREQ(layer->type(), "SPP");
}

}  // namespace
}  // namespace caffe
