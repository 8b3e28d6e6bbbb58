// The capture probe's arithmetic: the chosen share, the best share within each blob
// at the same per-blob counts, and the best share overall, of the summed residual's
// squared norm.
#include <gtest/gtest.h>

#include "caffe/sync/capture_probe.hpp"

namespace caffe {
namespace {

TEST(CaptureProbeTest, SharesOfTheSquaredNorm) {
  // One blob; squares 9, 16, 1, 0, 4: total 30.
  const std::vector<float> summed = {3, -4, 1, 0, 2};
  {
    // Chose the 1 and the 2 (5 of 30); the best two are -4 and 3 (25 of 30).
    const CaptureShares s = MeasureCapture(summed, {0, 0, 1, 0, 1}, {0});
    EXPECT_NEAR(s.chosen, 5.0 / 30, 1e-12);
    EXPECT_NEAR(s.in_blobs, 25.0 / 30, 1e-12);
    EXPECT_NEAR(s.best, 25.0 / 30, 1e-12);
  }
  {
    // The best choice scores what the best does.
    const CaptureShares s = MeasureCapture(summed, {1, 1, 0, 0, 0}, {0});
    EXPECT_NEAR(s.chosen, 25.0 / 30, 1e-12);
    EXPECT_NEAR(s.best, s.chosen, 1e-12);
  }
  {
    const CaptureShares s = MeasureCapture(summed, {0, 0, 0, 0, 0}, {0});
    EXPECT_EQ(s.chosen, 0);
    EXPECT_EQ(s.in_blobs, 0);
    EXPECT_EQ(s.best, 0);
  }
  {
    const CaptureShares s = MeasureCapture(summed, {1, 1, 1, 1, 1}, {0});
    EXPECT_NEAR(s.chosen, 1.0, 1e-12);
    EXPECT_NEAR(s.best, 1.0, 1e-12);
  }
}

// Two blobs: {3, -4 | 1, 0, 2}. One coordinate chosen in each: the best within the
// blobs is -4 and 2 (20 of 30), the best two overall -4 and 3 (25 of 30), whatever the
// choice inside the blobs was.
TEST(CaptureProbeTest, WithinBlobsKeepsEachBlobsCount) {
  const std::vector<float> summed = {3, -4, 1, 0, 2};
  const CaptureShares s = MeasureCapture(summed, {1, 0, 0, 1, 0}, {0, 2});
  EXPECT_NEAR(s.chosen, 9.0 / 30, 1e-12);
  EXPECT_NEAR(s.in_blobs, 20.0 / 30, 1e-12);
  EXPECT_NEAR(s.best, 25.0 / 30, 1e-12);
}

// Scaled by |w|: a small V on a small weight outranks a large V on a large one.
TEST(CaptureProbeTest, ScaledByTheWeight) {
  const std::vector<float> summed = {1, 10};
  const std::vector<float> scale = {0.01f, 100};  // importances 100 and 0.1
  const CaptureShares s = MeasureCapture(summed, {1, 0}, {0}, &scale);
  EXPECT_NEAR(s.chosen, 1e4 / (1e4 + 0.01), 1e-9);
  EXPECT_NEAR(s.best, s.chosen, 1e-12);
  EXPECT_NEAR(MeasureCapture(summed, {1, 0}, {0}).chosen, 1.0 / 101, 1e-12);
}

TEST(CaptureProbeTest, NothingWaitingGivesZero) {
  const CaptureShares s = MeasureCapture({0, 0, 0}, {1, 0, 0}, {0});
  EXPECT_EQ(s.chosen, 0);
  EXPECT_EQ(s.best, 0);
}

}  // namespace
}  // namespace caffe
