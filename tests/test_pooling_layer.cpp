// Pooling: literal MAX / AVE results (padding, CEIL vs FLOOR, Caffe's last-window
// rule), the argmax mask top, global pooling, STOCHASTIC in TRAIN and TEST, gradient
// checks, and parameter errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

LayerParameter PoolParam(const std::string& pool_fields, const std::string& extra = "") {
  return ParseLayer("name: 'pool' type: 'Pooling' pooling_param { " + pool_fields + " } " +
                    extra);
}

// x[h][w] = (7 (6h + w)) mod 36: a permutation of 0..35, so every max is unique.
void FillPermutation6x6(Blob* blob) {
  blob->Reshape({1, 1, 6, 6});
  for (int i = 0; i < 36; ++i) blob->mutable_cpu_data()[i] = static_cast<float>(i * 7 % 36);
}

void ExpectValues(const Blob& blob, const vector<float>& expected, float tol = 1e-6f) {
  ASSERT_EQ(blob.count(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(blob.cpu_data()[i], expected[i], tol) << "element " << i;
  }
}

TEST(PoolingLayerTest, MaxCeilVersusFloor) {
  // 3x3 windows, stride 2, on 6x6: CEIL keeps a third, clipped window (3x3 output),
  // FLOOR drops it (2x2).
  Blob bottom, top, mask;
  FillPermutation6x6(&bottom);
  vector<Blob*> bottoms{&bottom}, tops{&top, &mask};
  PoolingLayer ceil_layer(PoolParam("pool: MAX kernel_size: 3 stride: 2"));
  ceil_layer.SetUp(bottoms, tops);
  ceil_layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 3, 3}));
  ExpectValues(top, {26, 34, 35, 32, 33, 23, 31, 22, 29});
  ExpectValues(mask, {14, 10, 5, 20, 15, 29, 25, 34, 35});

  PoolingLayer floor_layer(PoolParam("pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR"));
  floor_layer.SetUp(bottoms, tops);
  floor_layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 2, 2}));
  ExpectValues(top, {26, 34, 32, 33});
  ExpectValues(mask, {14, 10, 20, 15});
}

TEST(PoolingLayerTest, MaxWithPaddingIgnoresThePadding) {
  // 3x3 of -1..-9, kernel 2, stride 2, pad 1. CEIL gives 3 outputs per axis, but the
  // third window would start in the right padding, so Caffe's rule leaves 2.
  Blob bottom({1, 1, 3, 3}), top, mask;
  for (int i = 0; i < 9; ++i) bottom.mutable_cpu_data()[i] = -(i + 1);
  vector<Blob*> bottoms{&bottom}, tops{&top, &mask};
  PoolingLayer layer(PoolParam("pool: MAX kernel_size: 2 stride: 2 pad: 1"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 2, 2}));
  // Windows: {x00}, {x01, x02}, {x10, x20}, {x11, x12, x21, x22}; padding is not 0.
  ExpectValues(top, {-1, -2, -4, -5});
  ExpectValues(mask, {0, 1, 3, 4});
}

TEST(PoolingLayerTest, AveWithPaddingCountsPaddingInTheDivisor) {
  // 4x4 of ones, kernel 3, stride 2, pad 1 -> 3x3. The divisor is the window clipped
  // to the padded image [-1, 5), so padding counts as zeros: corners 4/9, edges 6/9,
  // and the last row/column windows [3, 6) clip to [3, 5) (size 2) before summing
  // only row/column 3.
  Blob bottom({1, 1, 4, 4}), top;
  std::fill_n(bottom.mutable_cpu_data(), 16, 1.f);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: AVE kernel_size: 3 stride: 2 pad: 1"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 3, 3}));
  ExpectValues(top, {4 / 9.f, 6 / 9.f, 2 / 6.f, 6 / 9.f, 1, 3 / 6.f, 2 / 6.f, 3 / 6.f, 1 / 4.f});
}

TEST(PoolingLayerTest, AveHandComputed) {
  // 1..9 in 3x3, kernel 3, stride 2, pad 1 -> 2x2; every divisor is 9.
  Blob bottom({1, 1, 3, 3}), top;
  for (int i = 0; i < 9; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: AVE kernel_size: 3 stride: 2 pad: 1"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 2, 2}));
  ExpectValues(top, {12 / 9.f, 16 / 9.f, 24 / 9.f, 28 / 9.f});

  PoolingLayer floor_layer(PoolParam("pool: AVE kernel_size: 2 round_mode: FLOOR"));
  floor_layer.SetUp(bottoms, tops);
  floor_layer.Forward(bottoms, tops);
  ExpectValues(top, {3, 4, 6, 7});
}

TEST(PoolingLayerTest, RectangularKernelMatchesNaiveLoop) {
  Blob bottom({2, 3, 5, 7}), top, mask;
  FillUniform(&bottom, -1, 1);
  vector<Blob*> bottoms{&bottom}, tops{&top, &mask};
  PoolingLayer layer(PoolParam(
      "pool: MAX kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 pad_w: 0"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  // H: ceil((5 + 2 - 2) / 1) + 1 = 6; W: ceil((7 - 3) / 2) + 1 = 3.
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3, 6, 3}));
  for (int p = 0; p < 6; ++p)
    for (int ph = 0; ph < 6; ++ph)
      for (int pw = 0; pw < 3; ++pw) {
        float best = -FLT_MAX;
        int best_index = -1;
        for (int h = std::max(ph - 1, 0); h < std::min(ph + 1, 5); ++h)
          for (int w = pw * 2; w < std::min(pw * 2 + 3, 7); ++w) {
            if (bottom.cpu_data()[p * 35 + h * 7 + w] > best) {
              best = bottom.cpu_data()[p * 35 + h * 7 + w];
              best_index = h * 7 + w;
            }
          }
        const int out = (p * 6 + ph) * 3 + pw;
        EXPECT_EQ(top.cpu_data()[out], best) << out;
        EXPECT_EQ(mask.cpu_data()[out], best_index) << out;
      }
}

// Every MAX geometry of small kernels, strides and pads, CEIL and FLOOR, on values
// with many ties and one NaN, without a mask top (so the outputs whose windows need
// no clipping along w take the layer's row-at-a-time path): the outputs and the
// input each output passes its gradient to match a naive loop in which the first
// input of a window (row-major) wins ties and a NaN wins only where it comes first.
TEST(PoolingLayerTest, MaxMatchesNaiveLoopOnTiesAndNaN) {
  int cases = 0;
  for (int kernel = 1; kernel <= 4; ++kernel)
    for (int stride = 1; stride <= 3; ++stride)
      for (int pad = 0; pad < kernel; ++pad)
        for (const char* round : {"CEIL", "FLOOR"})
          for (int width : {1, 4, 9}) {
            const int height = 5;
            if (width + 2 * pad < kernel) continue;  // no window fits: a shape error
            SCOPED_TRACE(testing::Message() << "kernel " << kernel << " stride " << stride
                                            << " pad " << pad << " " << round << " width "
                                            << width);
            const LayerParameter param = PoolParam(
                "pool: MAX kernel_h: " + std::to_string(kernel) + " kernel_w: " +
                std::to_string(kernel) + " stride: " + std::to_string(stride) +
                " pad: " + std::to_string(pad) + " round_mode: " + round);
            Blob bottom({2, 2, height, width}), top;
            std::mt19937_64 rng(cases);
            for (int64_t i = 0; i < bottom.count(); ++i) {
              bottom.mutable_cpu_data()[i] = static_cast<float>(rng() % 4);  // ties
            }
            bottom.mutable_cpu_data()[rng() % bottom.count()] = std::nanf("");
            PoolingLayer layer(param);
            vector<Blob*> bottoms{&bottom}, tops{&top};
            layer.SetUp(bottoms, tops);
            layer.Forward(bottoms, tops);
            for (int64_t i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = 1.f + i;
            layer.Backward(tops, {true}, bottoms);

            const int ph_count = top.shape(2), pw_count = top.shape(3);
            vector<float> expected_dx(bottom.count(), 0.f);
            for (int p = 0; p < 4; ++p) {
              const float* x = bottom.cpu_data() + p * height * width;
              for (int ph = 0; ph < ph_count; ++ph)
                for (int pw = 0; pw < pw_count; ++pw) {
                  const int h0 = std::max(ph * stride - pad, 0);
                  const int h1 = std::min(ph * stride - pad + kernel, height);
                  const int w0 = std::max(pw * stride - pad, 0);
                  const int w1 = std::min(pw * stride - pad + kernel, width);
                  int source = -1;
                  for (int h = h0; h < h1; ++h)
                    for (int w = w0; w < w1; ++w) {
                      if (source < 0 || x[h * width + w] > x[source]) source = h * width + w;
                    }
                  const int64_t out = (p * ph_count + ph) * pw_count + pw;
                  const float y = top.cpu_data()[out];
                  if (source < 0) {
                    EXPECT_EQ(y, 0.f) << out;
                    continue;
                  }
                  if (std::isnan(x[source])) {
                    EXPECT_TRUE(std::isnan(y)) << out;
                  } else {
                    EXPECT_EQ(y, x[source]) << out;
                  }
                  expected_dx[p * height * width + source] += top.cpu_diff()[out];
                }
            }
            for (int64_t i = 0; i < bottom.count(); ++i) {
              EXPECT_EQ(bottom.cpu_diff()[i], expected_dx[i]) << i;
            }
            ++cases;
          }
  EXPECT_GT(cases, 100);
}

TEST(PoolingLayerTest, WindowOutsideTheImageOutputsZero) {
  // CEIL with stride > kernel and no padding: the third window starts at 6 of 5.
  Blob bottom({1, 1, 1, 5}), top;
  for (int i = 0; i < 5; ++i) bottom.mutable_cpu_data()[i] = -(i + 1);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: MAX kernel_size: 1 stride: 3"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ExpectValues(top, {-1, -4, 0});
  std::fill_n(top.mutable_cpu_diff(), 3, 1.f);
  layer.Backward(tops, {true}, bottoms);
  const float expected_diff[] = {1, 0, 0, 1, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bottom.cpu_diff()[i], expected_diff[i]);
}

TEST(PoolingLayerTest, GlobalPooling) {
  Blob bottom({2, 3, 4, 5}), top;
  FillUniform(&bottom, -1, 1);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  for (const char* method : {"MAX", "AVE"}) {
    PoolingLayer layer(PoolParam(std::string("pool: ") + method + " global_pooling: true"));
    layer.SetUp(bottoms, tops);
    layer.Forward(bottoms, tops);
    ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3, 1, 1}));
    for (int p = 0; p < 6; ++p) {
      const float* plane = bottom.cpu_data() + p * 20;
      const float expected = std::string(method) == "MAX"
                                 ? *std::max_element(plane, plane + 20)
                                 : std::accumulate(plane, plane + 20, 0.f) / 20;
      EXPECT_NEAR(top.cpu_data()[p], expected, 1e-6) << method << " plane " << p;
    }
  }
  // The kernel follows the bottom when it is reshaped.
  PoolingLayer layer(PoolParam("pool: AVE global_pooling: true"));
  layer.SetUp(bottoms, tops);
  bottom.Reshape({1, 2, 3, 3});
  std::fill_n(bottom.mutable_cpu_data(), 18, 2.f);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 2, 1, 1}));
  ExpectValues(top, {2, 2});
}

TEST(PoolingLayerTest, MaskTopGivesTheSameGradientAsInternalIndices) {
  Blob bottom({2, 2, 5, 5}), top_a, mask, top_b;
  FillDistinct(&bottom, 3);
  const LayerParameter param = PoolParam("pool: MAX kernel_size: 3 stride: 2 pad: 1");
  PoolingLayer with_mask(param), without_mask(param);
  vector<Blob*> bottoms{&bottom}, tops_a{&top_a, &mask}, tops_b{&top_b};
  with_mask.SetUp(bottoms, tops_a);
  without_mask.SetUp(bottoms, tops_b);
  with_mask.Forward(bottoms, tops_a);
  without_mask.Forward(bottoms, tops_b);
  FillUniform(&top_a, -1, 1, 4);
  std::copy(top_a.cpu_data(), top_a.cpu_data() + top_a.count(), top_a.mutable_cpu_diff());
  std::copy(top_a.cpu_data(), top_a.cpu_data() + top_a.count(), top_b.mutable_cpu_diff());
  with_mask.Backward(tops_a, {true}, bottoms);
  const vector<float> diff_a(bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
  without_mask.Backward(tops_b, {true}, bottoms);
  float total = 0;
  for (int64_t i = 0; i < bottom.count(); ++i) {
    EXPECT_EQ(bottom.cpu_diff()[i], diff_a[i]) << i;
    total += std::fabs(diff_a[i]);
  }
  EXPECT_GT(total, 0);
}

TEST(PoolingLayerTest, StochasticTestIsTheActivationWeightedAverage) {
  // Window {1, 3}: (1*1 + 3*3) / (1 + 3) = 2.5; an all-zero window gives 0.
  Blob bottom({1, 1, 2, 2}), top;
  const float x[] = {1, 3, 0, 0};
  std::copy(x, x + 4, bottom.mutable_cpu_data());
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: STOCHASTIC kernel_h: 1 kernel_w: 2", "phase: TEST"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ExpectValues(top, {2.5f, 0});
}

TEST(PoolingLayerTest, StochasticTrainSamplesProportionally) {
  // One window {1, 3}: the 3 should come out three times as often as the 1.
  Blob bottom({1, 1, 1, 2}), top;
  bottom.mutable_cpu_data()[0] = 1;
  bottom.mutable_cpu_data()[1] = 3;
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: STOCHASTIC kernel_h: 1 kernel_w: 2", "phase: TRAIN"));
  layer.SetUp(bottoms, tops);
  const int trials = 4000;
  int threes = 0;
  for (int t = 0; t < trials; ++t) {
    layer.Forward(bottoms, tops);
    const float y = top.cpu_data()[0];
    ASSERT_TRUE(y == 1 || y == 3) << y;
    threes += y == 3;
    // The whole gradient goes to the sampled input.
    top.mutable_cpu_diff()[0] = 1;
    layer.Backward(tops, {true}, bottoms);
    EXPECT_EQ(bottom.cpu_diff()[0], y == 1 ? 1 : 0);
    EXPECT_EQ(bottom.cpu_diff()[1], y == 3 ? 1 : 0);
  }
  EXPECT_NEAR(threes / double(trials), 0.75, 0.03);

  // Same seed, same draws: the context's generator is the only source of randomness.
  layer.context().Seed(42);
  layer.Forward(bottoms, tops);
  vector<float> first;
  for (int t = 0; t < 20; ++t) {
    layer.Forward(bottoms, tops);
    first.push_back(top.cpu_data()[0]);
  }
  layer.context().Seed(42);
  layer.Forward(bottoms, tops);
  for (int t = 0; t < 20; ++t) {
    layer.Forward(bottoms, tops);
    EXPECT_EQ(top.cpu_data()[0], first[t]);
  }
}

TEST(PoolingLayerTest, StochasticTrainPicksWindowMembers) {
  Blob bottom({2, 2, 6, 6}), top;
  FillUniform(&bottom, 0.1f, 1);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  PoolingLayer layer(PoolParam("pool: STOCHASTIC kernel_size: 3 stride: 2", "phase: TRAIN"));
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 2, 3, 3}));
  for (int p = 0; p < 4; ++p)
    for (int ph = 0; ph < 3; ++ph)
      for (int pw = 0; pw < 3; ++pw) {
        const float y = top.cpu_data()[(p * 3 + ph) * 3 + pw];
        bool found = false;
        for (int h = ph * 2; h < std::min(ph * 2 + 3, 6); ++h)
          for (int w = pw * 2; w < std::min(pw * 2 + 3, 6); ++w)
            found |= bottom.cpu_data()[p * 36 + h * 6 + w] == y;
        EXPECT_TRUE(found) << "plane " << p << " output " << ph << "," << pw;
      }
}

void CheckPoolGradient(const LayerParameter& param, Blob* bottom, bool with_mask = false) {
  SCOPED_TRACE(param.ShortDebugString());
  Blob top, mask;
  vector<Blob*> tops{&top};
  if (with_mask) tops.push_back(&mask);
  PoolingLayer layer(param);
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {bottom}, tops);
  EXPECT_EQ(checker.checked(), bottom->count());
}

TEST(PoolingLayerTest, GradientMax) {
  Blob bottom({2, 2, 5, 5});
  FillDistinct(&bottom, 1);
  CheckPoolGradient(PoolParam("pool: MAX kernel_size: 3 stride: 2 pad: 1"), &bottom);
  CheckPoolGradient(PoolParam("pool: MAX kernel_size: 2 stride: 1"), &bottom, true);
  CheckPoolGradient(PoolParam("pool: MAX kernel_h: 3 kernel_w: 2 stride: 2 round_mode: FLOOR"),
                    &bottom);
  CheckPoolGradient(PoolParam("pool: MAX global_pooling: true"), &bottom);
}

TEST(PoolingLayerTest, GradientAve) {
  Blob bottom({2, 2, 5, 4});
  FillUniform(&bottom, -1, 1);
  CheckPoolGradient(PoolParam("pool: AVE kernel_size: 3 stride: 2 pad: 1"), &bottom);
  CheckPoolGradient(PoolParam("pool: AVE kernel_size: 2 stride: 1"), &bottom);
  CheckPoolGradient(
      PoolParam("pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 1"),
      &bottom);
  CheckPoolGradient(PoolParam("pool: AVE global_pooling: true"), &bottom);
}

TEST(PoolingLayerTest, GradientStochasticTest) {
  Blob bottom({2, 2, 5, 5});
  FillUniform(&bottom, 0.5f, 1.5f);
  CheckPoolGradient(PoolParam("pool: STOCHASTIC kernel_size: 3 stride: 2", "phase: TEST"),
                    &bottom);
}

void ExpectSetUpError(const LayerParameter& param, Blob* bottom, int num_tops,
                      const std::string& fragment) {
  vector<Blob> tops(num_tops);
  vector<Blob*> top_ptrs;
  for (Blob& t : tops) top_ptrs.push_back(&t);
  PoolingLayer layer(param);
  try {
    vector<Blob*> bottoms{bottom};
    layer.SetUp(bottoms, top_ptrs);
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'pool' (Pooling)"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(PoolingLayerTest, Errors) {
  Blob image({1, 2, 4, 4}), tiny({1, 1, 2, 2}), flat({2, 3, 4});
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 2 pad: 2"), &image, 1,
                   "pad must be smaller than the kernel");
  ExpectSetUpError(PoolParam("pool: MAX"), &image, 1, "needs kernel_size");
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 2 kernel_h: 2 kernel_w: 2"), &image, 1,
                   "alternatives");
  ExpectSetUpError(PoolParam("pool: MAX kernel_h: 2"), &image, 1, "given together");
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 2 stride: 0"), &image, 1,
                   "stride must be positive");
  ExpectSetUpError(PoolParam("pool: AVE global_pooling: true kernel_size: 2"), &image, 1,
                   "global_pooling");
  ExpectSetUpError(PoolParam("pool: AVE global_pooling: true pad: 1"), &image, 1,
                   "global_pooling needs pad 0");
  ExpectSetUpError(PoolParam("pool: STOCHASTIC kernel_size: 3 pad: 1"), &image, 1,
                   "only supported for MAX and AVE");
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 2"), &flat, 1, "must be 4-d");
  ExpectSetUpError(PoolParam("pool: AVE kernel_size: 2"), &image, 2, "at most 1 top");
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 3 round_mode: FLOOR"), &tiny, 1,
                   "does not fit");
  // A huge pad makes a top of about 5e16 elements: its index cannot be allocated, and
  // that is the layer's error, not std::bad_alloc.
  ExpectSetUpError(PoolParam("pool: MAX kernel_size: 2000000000 pad: 1121664915"), &tiny, 1,
                   "the max-pooling index needs");
}

TEST(PoolingLayerTest, RegisteredAsPooling) {
  auto layer = LayerRegistry::CreateLayer(PoolParam("pool: MAX kernel_size: 2"));
  EXPECT_STREQ(layer->type(), "Pooling");
}

}  // namespace
}  // namespace caffe
