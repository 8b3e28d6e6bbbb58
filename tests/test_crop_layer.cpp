#include <gtest/gtest.h>

#include "caffe/layers/crop_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(CropLayerTest, SpatialCropWithPerAxisOffsets) {
  Blob bottom({2, 3, 5, 6}), reference({9, 9, 2, 3});
  FillUniform(&bottom, -1, 1);
  Blob top;
  CropLayer layer(ParseLayer("name: 'crop' type: 'Crop' crop_param { offset: 1 offset: 2 }"));
  vector<Blob*> bottoms{&bottom, &reference}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3, 2, 3}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 3; ++w)
          EXPECT_EQ(top.data_at(n, c, h, w), bottom.data_at(n, c, h + 1, w + 2));
}

TEST(CropLayerTest, AllAxesWithOneOffset) {
  Blob bottom({4, 5, 3}), reference({2, 3, 1});
  FillUniform(&bottom, -1, 1);
  Blob top;
  CropLayer layer(ParseLayer("name: 'crop' type: 'Crop' crop_param { axis: 0 offset: 1 }"));
  vector<Blob*> bottoms{&bottom, &reference}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3, 1}));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      EXPECT_EQ(top.cpu_data()[a * 3 + b], bottom.cpu_data()[bottom.offset({a + 1, b + 1, 1})]);
}

TEST(CropLayerTest, GradientReachesFirstBottomOnly) {
  Blob bottom({2, 2, 4, 5}), reference({2, 2, 2, 3});
  FillUniform(&bottom, -1, 1);
  FillUniform(&reference, -1, 1, 4);
  Blob top;
  CropLayer layer(ParseLayer("name: 'crop' type: 'Crop' crop_param { offset: 2 offset: 1 }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom, &reference}, {&top}, 0);
  EXPECT_EQ(checker.checked(), bottom.count());
  // Outside the crop window the gradient is zero.
  EXPECT_EQ(bottom.diff_at(0, 0, 0, 0), 0.f);
  EXPECT_NE(bottom.diff_at(0, 0, 2, 1), 0.f);
}

TEST(CropLayerTest, OffsetTooLargeIsAnError) {
  Blob bottom({1, 1, 4, 4}), reference({1, 1, 3, 3});
  Blob top;
  CropLayer layer(ParseLayer(
      "name: 'crop' type: 'Crop' bottom: 'score' bottom: 'data' crop_param { offset: 2 }"));
  vector<Blob*> bottoms{&bottom, &reference}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'crop'"), std::string::npos) << what;
    EXPECT_NE(what.find("'score'"), std::string::npos) << what;
    EXPECT_NE(what.find("1x1x3x3"), std::string::npos) << what;
  }
}

TEST(CropLayerTest, WrongOffsetCountIsAnError) {
  Blob bottom({1, 1, 4, 4}), reference({1, 1, 3, 3});
  Blob top;
  CropLayer layer(ParseLayer(
      "name: 'crop' type: 'Crop' crop_param { offset: 0 offset: 0 offset: 0 }"));
  vector<Blob*> bottoms{&bottom, &reference}, tops{&top};
  EXPECT_THROW(layer.SetUp(bottoms, tops), Error);
}

}  // namespace caffe
