#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "caffe/layers/lrn_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Straight from the definition: clipped window, divided by the full window size.
void NaiveLRN(const Blob& x, int size, float alpha, float beta, float k, bool across,
              Blob* y) {
  y->ReshapeLike(x);
  const int half = (size - 1) / 2;
  const int64_t N = x.num(), C = x.channels(), H = x.height(), W = x.width();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          double sum = 0;
          if (across) {
            for (int64_t cc = std::max<int64_t>(0, c - half); cc <= std::min(C - 1, c + half); ++cc)
              sum += std::pow(x.data_at(n, cc, h, w), 2);
          } else {
            for (int64_t hh = std::max<int64_t>(0, h - half); hh <= std::min(H - 1, h + half); ++hh)
              for (int64_t ww = std::max<int64_t>(0, w - half); ww <= std::min(W - 1, w + half); ++ww)
                sum += std::pow(x.data_at(n, c, hh, ww), 2);
          }
          const double count = across ? size : size * size;
          const double scale = (across ? k : 1.0) + alpha / count * sum;
          y->mutable_cpu_data()[y->offset(n, c, h, w)] =
              static_cast<float>(x.data_at(n, c, h, w) * std::pow(scale, -beta));
        }
}

}  // namespace

TEST(LRNLayerTest, AcrossChannelsHandValues) {
  Blob bottom({1, 3, 1, 1});
  bottom.mutable_cpu_data()[0] = 1;
  bottom.mutable_cpu_data()[1] = 2;
  bottom.mutable_cpu_data()[2] = 3;
  Blob top;
  LRNLayer layer(ParseLayer(
      "name: 'norm' type: 'LRN' lrn_param { local_size: 3 alpha: 0.6 beta: 0.75 k: 2 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  // Channel 0 sees channels 0-1, channel 1 all three, channel 2 channels 1-2.
  EXPECT_NEAR(top.cpu_data()[0], 1 * std::pow(2 + 0.2 * (1 + 4), -0.75), 1e-6);
  EXPECT_NEAR(top.cpu_data()[1], 2 * std::pow(2 + 0.2 * (1 + 4 + 9), -0.75), 1e-6);
  EXPECT_NEAR(top.cpu_data()[2], 3 * std::pow(2 + 0.2 * (4 + 9), -0.75), 1e-6);
}

TEST(LRNLayerTest, ForwardMatchesNaiveLoops) {
  for (bool across : {true, false}) {
    Blob bottom({2, 7, 4, 5});
    FillUniform(&bottom, -2, 2);
    Blob top, expected;
    LayerParameter param = ParseLayer(
        "name: 'norm' type: 'LRN' lrn_param { local_size: 5 alpha: 0.3 beta: 0.8 k: 1.5 }");
    if (!across) param.mutable_lrn_param()->set_norm_region(LRNParameter::WITHIN_CHANNEL);
    LRNLayer layer(param);
    vector<Blob*> bottoms{&bottom}, tops{&top};
    layer.SetUp(bottoms, tops);
    layer.Forward(bottoms, tops);
    NaiveLRN(bottom, 5, 0.3f, 0.8f, 1.5f, across, &expected);
    ASSERT_EQ(top.shape(), bottom.shape());
    for (int64_t i = 0; i < top.count(); ++i) {
      EXPECT_NEAR(top.cpu_data()[i], expected.cpu_data()[i], 1e-5) << "across " << across << " i " << i;
    }
  }
}

TEST(LRNLayerTest, GradientAcrossChannels) {
  Blob bottom({2, 6, 3, 2});
  FillUniform(&bottom, -1.5, 1.5);
  Blob top;
  LRNLayer layer(ParseLayer(
      "name: 'norm' type: 'LRN' lrn_param { local_size: 3 alpha: 0.8 beta: 0.75 k: 1 }"));
  GradientChecker checker(1e-2f, 2e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count());
}

TEST(LRNLayerTest, GradientWithinChannel) {
  Blob bottom({2, 2, 5, 4});
  FillUniform(&bottom, -1.5, 1.5);
  Blob top;
  LRNLayer layer(ParseLayer(
      "name: 'norm' type: 'LRN' lrn_param { local_size: 3 alpha: 2 beta: 0.75 "
      "norm_region: WITHIN_CHANNEL }"));
  GradientChecker checker(1e-2f, 2e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), bottom.count());
}

TEST(LRNLayerTest, EvenLocalSizeIsAnError) {
  Blob bottom({1, 4, 2, 2});
  Blob top;
  LRNLayer layer(ParseLayer("name: 'norm' type: 'LRN' lrn_param { local_size: 4 }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  try {
    layer.SetUp(bottoms, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'norm'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("odd"), std::string::npos) << e.what();
  }
}

TEST(LRNLayerTest, NonFourAxisBottomIsAnError) {
  Blob bottom({4, 6});
  Blob top;
  LRNLayer layer(ParseLayer("name: 'norm' type: 'LRN'"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  EXPECT_THROW(layer.SetUp(bottoms, tops), Error);
}

}  // namespace caffe
