// Fillers: each distribution's defining property on a large blob.
#include <gtest/gtest.h>

#include <cmath>

#include "caffe/filler.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

struct Stats {
  double mean = 0, var = 0, min = 1e30, max = -1e30;
};

Stats Measure(const Blob& b) {
  Stats s;
  for (int64_t i = 0; i < b.count(); ++i) {
    const double x = b.cpu_data()[i];
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= b.count();
  for (int64_t i = 0; i < b.count(); ++i) s.var += std::pow(b.cpu_data()[i] - s.mean, 2);
  s.var /= b.count();
  return s;
}

Blob* Fill(Blob* blob, const string& text) {
  FillerParameter p;
  ParseProtoFromText(text, "<filler>", &p);
  std::mt19937_64 rng(5);
  FillBlob(p, blob, rng);
  return blob;
}

}  // namespace

TEST(FillerTest, Constant) {
  Blob b({3, 4});
  Fill(&b, "type: 'constant' value: 2.5");
  for (int i = 0; i < 12; ++i) EXPECT_EQ(b.cpu_data()[i], 2.5f);
}

TEST(FillerTest, UniformStaysInRange) {
  Blob b({100, 100});
  Stats s = Measure(*Fill(&b, "type: 'uniform' min: -2 max: 3"));
  EXPECT_GE(s.min, -2);
  EXPECT_LE(s.max, 3);
  EXPECT_NEAR(s.mean, 0.5, 0.05);
}

TEST(FillerTest, GaussianMoments) {
  Blob b({100, 100});
  Stats s = Measure(*Fill(&b, "type: 'gaussian' mean: 1 std: 2"));
  EXPECT_NEAR(s.mean, 1, 0.05);
  EXPECT_NEAR(std::sqrt(s.var), 2, 0.05);
}

TEST(FillerTest, SparseGaussianKeepsAboutSparsePerRow) {
  Blob b({200, 100});
  Fill(&b, "type: 'gaussian' std: 1 sparse: 10");
  int64_t nonzero = 0;
  for (int64_t i = 0; i < b.count(); ++i) nonzero += b.cpu_data()[i] != 0;
  EXPECT_NEAR(nonzero / 200.0, 10, 1.0);
}

TEST(FillerTest, XavierAndMsraScaleWithFanIn) {
  Blob b({64, 32, 3, 3});  // fan_in = 288
  Stats x = Measure(*Fill(&b, "type: 'xavier'"));
  EXPECT_NEAR(x.var, 1.0 / 288, 0.1 / 288);  // uniform(-a, a), a = sqrt(3/n): var = 1/n
  Stats m = Measure(*Fill(&b, "type: 'msra'"));
  EXPECT_NEAR(m.var, 2.0 / 288, 0.2 / 288);
  Stats avg = Measure(*Fill(&b, "type: 'msra' variance_norm: AVERAGE"));  // (288 + 576) / 2
  EXPECT_NEAR(avg.var, 2.0 / 432, 0.2 / 432);
}

TEST(FillerTest, PositiveUnitballRowsSumToOne) {
  Blob b({5, 7});
  Fill(&b, "type: 'positive_unitball'");
  for (int r = 0; r < 5; ++r) {
    double sum = 0;
    for (int c = 0; c < 7; ++c) {
      EXPECT_GE(b.cpu_data()[r * 7 + c], 0);
      sum += b.cpu_data()[r * 7 + c];
    }
    EXPECT_NEAR(sum, 1, 1e-5);
  }
}

TEST(FillerTest, BilinearKernel) {
  Blob b({1, 1, 4, 4});
  Fill(&b, "type: 'bilinear'");
  // factor 2 upsampling kernel: outer products of (0.25, 0.75, 0.75, 0.25).
  const float w[] = {0.25f, 0.75f, 0.75f, 0.25f};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_NEAR(b.cpu_data()[y * 4 + x], w[y] * w[x], 1e-6);
}

TEST(FillerTest, UnknownTypeIsAnError) {
  Blob b({2});
  try {
    Fill(&b, "type: 'gausian'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("unknown filler type 'gausian'"), string::npos);
  }
}

}  // namespace caffe
