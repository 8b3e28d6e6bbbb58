#include <gtest/gtest.h>

#include "caffe/layers/tile_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(TileLayerTest, HandValues) {
  Blob bottom({2, 3}), top;
  const float x[] = {1, 2, 3, 4, 5, 6};
  std::copy(x, x + 6, bottom.mutable_cpu_data());
  TileLayer layer(ParseLayer("name: 't' type: 'Tile' tile_param { tiles: 2 }"));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 6}));
  const float expected[] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(top.cpu_data()[i], expected[i]) << i;
}

TEST(TileLayerTest, ForwardMatchesNaiveLoop) {
  Blob bottom({2, 3, 2, 2}), top;
  FillUniform(&bottom, -1, 1);
  for (int axis : {0, 1, 2, -1}) {
    TileLayer layer(ParseLayer("name: 't' type: 'Tile' tile_param { tiles: 3 axis: " +
                               std::to_string(axis) + " }"));
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    const int a = axis < 0 ? axis + 4 : axis;
    vector<int64_t> expected_shape = bottom.shape();
    expected_shape[a] *= 3;
    ASSERT_EQ(top.shape(), expected_shape);
    for (int64_t n = 0; n < top.shape(0); ++n)
      for (int64_t c = 0; c < top.shape(1); ++c)
        for (int64_t h = 0; h < top.shape(2); ++h)
          for (int64_t w = 0; w < top.shape(3); ++w) {
            vector<int64_t> src{n, c, h, w};
            src[a] %= bottom.shape(a);
            EXPECT_EQ(top.data_at(n, c, h, w), bottom.cpu_data()[bottom.offset(src)]);
          }
  }
}

TEST(TileLayerTest, Gradient) {
  for (int axis : {0, 1, 3}) {
    Blob bottom({2, 3, 2, 2}), top;
    FillUniform(&bottom, -1, 1);
    TileLayer layer(ParseLayer("name: 't' type: 'Tile' tile_param { tiles: 3 axis: " +
                               std::to_string(axis) + " }"));
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), 24);
  }
}

TEST(TileLayerTest, MissingOrZeroTilesIsAnError) {
  Blob bottom({2, 3}), top;
  for (const char* proto : {"name: 't' type: 'Tile'",
                            "name: 't' type: 'Tile' tile_param { tiles: 0 }"}) {
    TileLayer layer(ParseLayer(proto));
    try {
      layer.SetUp({&bottom}, {&top});
      ADD_FAILURE() << "expected an error for " << proto;
    } catch (const Error& e) {
      EXPECT_NE(string(e.what()).find("layer 't'"), string::npos) << e.what();
      EXPECT_NE(string(e.what()).find("tiles"), string::npos) << e.what();
    }
  }
}

}  // namespace caffe
