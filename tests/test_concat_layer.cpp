#include <gtest/gtest.h>

#include "caffe/layers/concat_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(ConcatLayerTest, ChannelsMatchNaiveIndexing) {
  Blob a({2, 3, 2, 2}), b({2, 1, 2, 2});
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  Blob top;
  ConcatLayer layer(ParseLayer("name: 'cat' type: 'Concat'"));
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 4, 2, 2}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 4; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 2; ++w)
          EXPECT_EQ(top.data_at(n, c, h, w), c < 3 ? a.data_at(n, c, h, w) : b.data_at(n, c - 3, h, w));
}

TEST(ConcatLayerTest, LegacyConcatDimAndNegativeAxis) {
  Blob a({2, 3}), b({4, 3});
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  Blob top;
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  ConcatLayer legacy(ParseLayer("name: 'cat' type: 'Concat' concat_param { concat_dim: 0 }"));
  legacy.SetUp(bottoms, tops);
  legacy.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{6, 3}));
  for (int i = 0; i < 18; ++i) EXPECT_EQ(top.cpu_data()[i], i < 6 ? a.cpu_data()[i] : b.cpu_data()[i - 6]);
  Blob c({2, 2});
  FillUniform(&c, -1, 1, 3);
  vector<Blob*> ac{&a, &c};
  ConcatLayer last(ParseLayer("name: 'cat' type: 'Concat' concat_param { axis: -1 }"));
  last.SetUp(ac, tops);
  last.Forward(ac, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 5}));
  EXPECT_EQ(top.cpu_data()[3], c.cpu_data()[0]);
  EXPECT_EQ(top.cpu_data()[5], a.cpu_data()[3]);
}

TEST(ConcatLayerTest, SingleBottomSharesData) {
  Blob a({2, 3});
  Blob top;
  ConcatLayer layer(ParseLayer("name: 'cat' type: 'Concat'"));
  vector<Blob*> bottoms{&a}, tops{&top};
  layer.SetUp(bottoms, tops);
  EXPECT_EQ(top.cpu_data(), a.cpu_data());
  EXPECT_EQ(top.cpu_diff(), a.cpu_diff());
}

TEST(ConcatLayerTest, Gradient) {
  Blob a({2, 3, 2}), b({2, 2, 2}), c({2, 1, 2});
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  FillUniform(&c, -1, 1, 3);
  Blob top;
  ConcatLayer layer(ParseLayer("name: 'cat' type: 'Concat'"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&a, &b, &c}, {&top});
  EXPECT_EQ(checker.checked(), 24);
}

TEST(ConcatLayerTest, MismatchOffAxisIsAnError) {
  Blob a({2, 3, 4}), b({2, 3, 5});
  Blob top;
  ConcatLayer layer(ParseLayer("name: 'cat' type: 'Concat' bottom: 'x' bottom: 'y'"));
  vector<Blob*> bottoms{&a, &b}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'cat'"), std::string::npos) << what;
    EXPECT_NE(what.find("'y' is 2x3x5"), std::string::npos) << what;
  }
}

}  // namespace caffe
