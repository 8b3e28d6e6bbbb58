#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "caffe/util/plane_sums.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Lengths around every boundary of the lane layout (whole rows of lanes, single
// vectors, a scalar tail) and the feature-map sizes of the model zoo.
const int64_t kLengths[] = {0, 1, 7, 8, 9, 31, 32, 33, 40, 41, 49, 196, 784, 1001};

std::vector<float> Values(int64_t n, float offset, unsigned seed) {
  Blob blob({std::max<int64_t>(n, 1)});
  FillUniform(&blob, -1, 1, seed);
  std::vector<float> values(blob.cpu_data(), blob.cpu_data() + n);
  for (float& v : values) v += offset;
  return values;
}

// An (outer, channels, inner) array in Blob::channel_block's blocked order.
std::vector<float> ToChannelBlocked(const std::vector<float>& plain, int64_t outer, int64_t channels,
                                    int64_t inner, int block) {
  std::vector<float> blocked(plain.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t s = 0; s < inner; ++s) {
        blocked[((o * channels / block + c / block) * inner + s) * block + c % block] =
            plain[(o * channels + c) * inner + s];
      }
    }
  }
  return blocked;
}

}  // namespace

TEST(PlaneSumsTest, MatchADoublePrecisionLoopAtEveryLength) {
  for (int64_t n : kLengths) {
    const std::vector<float> a = Values(n, 0.25f, 1), b = Values(n, -0.5f, 2);
    double sum = 0, dot = 0, squares = 0;
    const float center = 0.125f;
    for (int64_t i = 0; i < n; ++i) {
      sum += a[i];
      dot += static_cast<double>(a[i]) * b[i];
      squares += (static_cast<double>(a[i]) - center) * (static_cast<double>(a[i]) - center);
    }
    const double tolerance = 1e-5 * (1 + n);
    EXPECT_NEAR(PlaneSum(a.data(), n), sum, tolerance) << "n = " << n;
    EXPECT_NEAR(PlaneSquaredDeviations(a.data(), n, center), squares, tolerance) << "n = " << n;
    double got_sum = -1, got_dot = -1;
    PlaneSumAndDot(a.data(), b.data(), n, &got_sum, &got_dot);
    EXPECT_NEAR(got_sum, sum, tolerance) << "n = " << n;
    EXPECT_NEAR(got_dot, dot, tolerance) << "n = " << n;
  }
}

TEST(PlaneSumsTest, EveryElementCountsOnce) {
  // A one at each position in turn: a dropped or doubled lane or tail element shows.
  for (int64_t n : kLengths) {
    std::vector<float> x(n, 0.f);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 1.f;
      ASSERT_EQ(PlaneSum(x.data(), n), 1.0) << "n = " << n << ", position " << i;
      ASSERT_EQ(PlaneSquaredDeviations(x.data(), n, 0.f), 1.0) << "n = " << n << ", position " << i;
      double sum = 0, dot = 0;
      PlaneSumAndDot(x.data(), x.data(), n, &sum, &dot);
      ASSERT_EQ(sum, 1.0) << "n = " << n << ", position " << i;
      ASSERT_EQ(dot, 1.0) << "n = " << n << ", position " << i;
      x[i] = 0.f;
    }
  }
}

// A channel block's sums are its channels' plane sums bit for bit, so a blocked
// blob's BatchNorm statistics equal a plain one's. Values of mixed magnitude make any
// change in the order of additions show in the last bits.
TEST(PlaneSumsTest, ChannelBlockSumsEqualEachChannelsPlaneSumBitwise) {
  for (int block : {8, 16}) {
    for (int64_t n : kLengths) {
      std::vector<float> a = Values(n * block, 0.3f, 3), b = Values(n * block, -0.2f, 4);
      for (int64_t i = 0; i < n * block; i += 5) a[i] *= 1000.f;
      std::vector<float> centers = Values(block, 0.f, 5);
      std::vector<double> sums(block), squares(block), sums2(block), dots(block);
      ChannelBlockSums(a.data(), n, block, sums.data());
      ChannelBlockSquaredDeviations(a.data(), n, block, centers.data(), squares.data());
      ChannelBlockSumsAndDots(a.data(), b.data(), n, block, sums2.data(), dots.data());
      for (int j = 0; j < block; ++j) {
        std::vector<float> plane_a(n), plane_b(n);
        for (int64_t s = 0; s < n; ++s) {
          plane_a[s] = a[s * block + j];
          plane_b[s] = b[s * block + j];
        }
        double sum = 0, dot = 0;
        PlaneSumAndDot(plane_a.data(), plane_b.data(), n, &sum, &dot);
        ASSERT_EQ(sums[j], PlaneSum(plane_a.data(), n)) << "block " << block << ", n " << n << ", channel " << j;
        ASSERT_EQ(squares[j], PlaneSquaredDeviations(plane_a.data(), n, centers[j]))
            << "block " << block << ", n " << n << ", channel " << j;
        ASSERT_EQ(sums2[j], sum) << "block " << block << ", n " << n << ", channel " << j;
        ASSERT_EQ(dots[j], dot) << "block " << block << ", n " << n << ", channel " << j;
      }
    }
  }
}

TEST(PlaneSumsTest, ChannelBlockTotalsEqualChannelSumsBitwise) {
  const int64_t outer = 11, channels = 32, inner = 49;
  const int block = 16;
  const std::vector<float> plain = Values(outer * channels * inner, 0.1f, 6);
  const std::vector<float> blocked = ToChannelBlocked(plain, outer, channels, inner, block);
  const std::vector<double> want = ChannelSums<1>(
      outer, channels, inner,
      [&](int64_t o, int64_t c, double* acc) { acc[0] += PlaneSum(&plain[(o * channels + c) * inner], inner); });
  const std::vector<double> got = ChannelBlockTotals<1>(
      outer, channels, inner, block, [&](int64_t o, int64_t cb, double* acc) {
        double sums[block];
        ChannelBlockSums(&blocked[(o * channels / block + cb) * inner * block], inner, block, sums);
        for (int j = 0; j < block; ++j) acc[j] += sums[j];
      });
  ASSERT_EQ(got.size(), want.size());
  for (size_t c = 0; c < want.size(); ++c) EXPECT_EQ(got[c], want[c]) << "channel " << c;
}

TEST(PlaneSumsTest, ChannelSumsAndDotsAreTheSameInEveryLayout) {
  const int64_t outer = 5, channels = 32, inner = 41;
  const std::vector<float> a = Values(outer * channels * inner, 0.3f, 7);
  const std::vector<float> b = Values(outer * channels * inner, -0.2f, 8);
  const std::vector<double> plain = ChannelSumsAndDots(outer, channels, inner, 0, a.data(), b.data());
  ASSERT_EQ(plain.size(), static_cast<size_t>(2 * channels));
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0.0, dot = 0.0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t s = 0; s < inner; ++s) {
        const int64_t i = (o * channels + c) * inner + s;
        sum += a[i];
        dot += static_cast<double>(a[i]) * b[i];
      }
    }
    EXPECT_NEAR(plain[2 * c], sum, 1e-4) << "channel " << c;
    EXPECT_NEAR(plain[2 * c + 1], dot, 1e-4) << "channel " << c;
  }
  const std::vector<double> sums_only = ChannelSumsAndDots(outer, channels, inner, 0, a.data(), nullptr);
  for (int64_t c = 0; c < channels; ++c) {
    EXPECT_EQ(sums_only[2 * c], plain[2 * c]) << "channel " << c;
    EXPECT_EQ(sums_only[2 * c + 1], 0.0) << "channel " << c;
  }
  for (int block : {8, 16}) {
    const std::vector<float> a_blocked = ToChannelBlocked(a, outer, channels, inner, block);
    const std::vector<float> b_blocked = ToChannelBlocked(b, outer, channels, inner, block);
    const std::vector<double> got =
        ChannelSumsAndDots(outer, channels, inner, block, a_blocked.data(), b_blocked.data());
    const std::vector<double> got_sums =
        ChannelSumsAndDots(outer, channels, inner, block, a_blocked.data(), nullptr);
    ASSERT_EQ(got.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(got[i], plain[i]) << "block " << block << ", entry " << i;
      EXPECT_EQ(got_sums[i], sums_only[i]) << "block " << block << ", entry " << i;
    }
  }
}

}  // namespace caffe
