// im2col / col2im against a direct definition: the 2-d and n-d forms agree with a
// naive loop and with each other, and col2im is the adjoint of im2col.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "caffe/util/im2col.hpp"

namespace caffe {
namespace {

struct Geometry2d {
  int channels, height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w,
      dilation_h, dilation_w;
  int out_h() const {
    return (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1;
  }
  int out_w() const {
    return (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1;
  }
  int image_count() const { return channels * height * width; }
  int col_count() const { return channels * kernel_h * kernel_w * out_h() * out_w(); }
};

// Channels, kernel size, padding, stride, dilation, non-square, kernel == image.
const Geometry2d kCases[] = {
    {1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1}, {2, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1},
    {3, 7, 6, 3, 2, 1, 0, 2, 1, 1, 1}, {2, 7, 7, 3, 3, 2, 1, 2, 3, 2, 1},
    {1, 6, 8, 2, 3, 0, 2, 1, 2, 2, 3}, {2, 4, 4, 4, 4, 0, 0, 1, 1, 1, 1},
    {1, 5, 5, 1, 1, 0, 0, 1, 1, 1, 1},
};

std::vector<float> RandomVector(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Column row (c, kh, kw), column (oh, ow) holds image (c, oh*s - p + kh*d, ...) or 0.
std::vector<float> NaiveIm2col(const std::vector<float>& im, const Geometry2d& g) {
  const int oh_n = g.out_h(), ow_n = g.out_w();
  std::vector<float> col(g.col_count());
  for (int c = 0; c < g.channels; ++c)
    for (int kh = 0; kh < g.kernel_h; ++kh)
      for (int kw = 0; kw < g.kernel_w; ++kw)
        for (int oh = 0; oh < oh_n; ++oh)
          for (int ow = 0; ow < ow_n; ++ow) {
            const int h = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
            const int w = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
            const int row = (c * g.kernel_h + kh) * g.kernel_w + kw;
            const bool inside = h >= 0 && h < g.height && w >= 0 && w < g.width;
            col[(row * oh_n + oh) * ow_n + ow] =
                inside ? im[(c * g.height + h) * g.width + w] : 0.f;
          }
  return col;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

TEST(Im2colTest, TwoDimMatchesNaiveLoop) {
  uint64_t seed = 1;
  for (const Geometry2d& g : kCases) {
    const std::vector<float> im = RandomVector(g.image_count(), seed++);
    std::vector<float> col(g.col_count(), 123.f);  // stale values must be overwritten
    im2col(im.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, col.data());
    EXPECT_EQ(col, NaiveIm2col(im, g)) << "case " << seed - 1;
  }
}

TEST(Im2colTest, SmallCaseLiteral) {
  // 1 channel 3x3 image, 2x2 kernel, no padding: four 2x2 patches.
  const std::vector<float> im{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> col(16);
  im2col(im.data(), 1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, col.data());
  const std::vector<float> expected{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9};
  EXPECT_EQ(col, expected);
}

TEST(Im2colTest, NdMatchesTwoDim) {
  uint64_t seed = 100;
  for (const Geometry2d& g : kCases) {
    const std::vector<float> im = RandomVector(g.image_count(), seed++);
    const int im_shape[] = {g.channels, g.height, g.width};
    const int col_shape[] = {g.channels * g.kernel_h * g.kernel_w, g.out_h(), g.out_w()};
    const int kernel[] = {g.kernel_h, g.kernel_w}, pad[] = {g.pad_h, g.pad_w};
    const int stride[] = {g.stride_h, g.stride_w}, dilation[] = {g.dilation_h, g.dilation_w};
    std::vector<float> col2d(g.col_count()), colnd(g.col_count(), 7.f);
    im2col(im.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, col2d.data());
    im2col_nd(im.data(), 2, im_shape, col_shape, kernel, pad, stride, dilation, colnd.data());
    EXPECT_EQ(col2d, colnd);

    const std::vector<float> col = RandomVector(g.col_count(), seed++);
    std::vector<float> im2d(g.image_count(), 5.f), imnd(g.image_count(), -5.f);
    col2im(col.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, im2d.data());
    col2im_nd(col.data(), 2, im_shape, col_shape, kernel, pad, stride, dilation, imnd.data());
    for (int i = 0; i < g.image_count(); ++i) EXPECT_NEAR(im2d[i], imnd[i], 1e-5) << i;
  }
}

TEST(Im2colTest, Col2imIsAdjointOfIm2col) {
  uint64_t seed = 200;
  for (const Geometry2d& g : kCases) {
    const std::vector<float> x = RandomVector(g.image_count(), seed++);
    const std::vector<float> y = RandomVector(g.col_count(), seed++);
    std::vector<float> col(g.col_count()), im(g.image_count());
    im2col(x.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, col.data());
    col2im(y.data(), g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, im.data());
    EXPECT_NEAR(Dot(col, y), Dot(x, im), 1e-4);
  }
}

// 3-d: 2 channels of 4x5x6, kernel 2x3x2, pad (1,0,1), stride (1,2,2), dilation (2,1,1).
TEST(Im2colTest, ThreeDimMatchesNaiveLoopAndIsAdjoint) {
  const int C = 2, D = 4, H = 5, W = 6;
  const int k[] = {2, 3, 2}, p[] = {1, 0, 1}, s[] = {1, 2, 2}, d[] = {2, 1, 1};
  const int in[] = {D, H, W};
  int out[3];
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) / s[i] + 1;
  const int im_shape[] = {C, D, H, W};
  const int col_shape[] = {C * k[0] * k[1] * k[2], out[0], out[1], out[2]};
  const int out_count = out[0] * out[1] * out[2];
  const int col_count = col_shape[0] * out_count;
  const std::vector<float> x = RandomVector(C * D * H * W, 7);

  std::vector<float> expected(col_count);
  for (int c = 0; c < C; ++c)
    for (int a = 0; a < k[0]; ++a)
      for (int b = 0; b < k[1]; ++b)
        for (int e = 0; e < k[2]; ++e)
          for (int od = 0; od < out[0]; ++od)
            for (int oh = 0; oh < out[1]; ++oh)
              for (int ow = 0; ow < out[2]; ++ow) {
                const int zd = od * s[0] - p[0] + a * d[0];
                const int zh = oh * s[1] - p[1] + b * d[1];
                const int zw = ow * s[2] - p[2] + e * d[2];
                const bool inside = zd >= 0 && zd < D && zh >= 0 && zh < H && zw >= 0 && zw < W;
                const int row = ((c * k[0] + a) * k[1] + b) * k[2] + e;
                expected[row * out_count + (od * out[1] + oh) * out[2] + ow] =
                    inside ? x[((c * D + zd) * H + zh) * W + zw] : 0.f;
              }
  std::vector<float> col(col_count, 9.f);
  im2col_nd(x.data(), 3, im_shape, col_shape, k, p, s, d, col.data());
  EXPECT_EQ(col, expected);

  const std::vector<float> y = RandomVector(col_count, 8);
  std::vector<float> im(x.size(), 3.f);
  col2im_nd(y.data(), 3, im_shape, col_shape, k, p, s, d, im.data());
  EXPECT_NEAR(Dot(col, y), Dot(x, im), 1e-4);
}

}  // namespace
}  // namespace caffe
