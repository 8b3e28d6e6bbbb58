#include <gtest/gtest.h>

#include "caffe/layers/slice_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(SliceLayerTest, SlicePointsAlongChannels) {
  Blob bottom({2, 6, 2, 1});
  FillUniform(&bottom, -1, 1);
  Blob t0, t1, t2;
  SliceLayer layer(ParseLayer(
      "name: 's' type: 'Slice' slice_param { axis: 1 slice_point: 1 slice_point: 4 }"));
  vector<Blob*> bottoms{&bottom}, tops{&t0, &t1, &t2};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(t0.shape(), (vector<int64_t>{2, 1, 2, 1}));
  ASSERT_EQ(t1.shape(), (vector<int64_t>{2, 3, 2, 1}));
  ASSERT_EQ(t2.shape(), (vector<int64_t>{2, 2, 2, 1}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 6; ++c)
      for (int h = 0; h < 2; ++h) {
        const Blob& t = c < 1 ? t0 : c < 4 ? t1 : t2;
        const int start = c < 1 ? 0 : c < 4 ? 1 : 4;
        EXPECT_EQ(t.data_at(n, c - start, h, 0), bottom.data_at(n, c, h, 0));
      }
}

TEST(SliceLayerTest, EqualSplitWithLegacySliceDim) {
  Blob bottom({6, 2});
  FillUniform(&bottom, -1, 1);
  Blob t0, t1, t2;
  SliceLayer layer(ParseLayer("name: 's' type: 'Slice' slice_param { slice_dim: 0 }"));
  vector<Blob*> bottoms{&bottom}, tops{&t0, &t1, &t2};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (Blob* t : tops) ASSERT_EQ(t->shape(), (vector<int64_t>{2, 2}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(tops[i / 4]->cpu_data()[i % 4], bottom.cpu_data()[i]);
}

TEST(SliceLayerTest, Gradient) {
  Blob bottom({2, 5, 3});
  FillUniform(&bottom, -1, 1);
  Blob t0, t1;
  SliceLayer layer(ParseLayer("name: 's' type: 'Slice' slice_param { slice_point: 2 }"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&t0, &t1});
  EXPECT_EQ(checker.checked(), bottom.count());
}

TEST(SliceLayerTest, UnevenSplitIsAnError) {
  Blob bottom({2, 5});
  Blob t0, t1;
  SliceLayer layer(ParseLayer("name: 's' type: 'Slice'"));
  vector<Blob*> bottoms{&bottom}, tops{&t0, &t1};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 's'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 equal parts"), std::string::npos) << e.what();
  }
}

TEST(SliceLayerTest, DecreasingSlicePointsAreAnError) {
  Blob bottom({2, 5});
  Blob t0, t1, t2;
  SliceLayer layer(ParseLayer(
      "name: 's' type: 'Slice' slice_param { slice_point: 3 slice_point: 2 }"));
  vector<Blob*> bottoms{&bottom}, tops{&t0, &t1, &t2};
  EXPECT_THROW(layer.SetUp(bottoms, tops), Error);
}

}  // namespace caffe
