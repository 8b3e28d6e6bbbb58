// The half-precision conversion of FP16 values on the wire: every half survives the
// round trip bit for bit, rounding is to nearest with ties to even, finite values
// beyond the range saturate, and NaN and infinities keep their class.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "caffe/sync/half_precision.hpp"

namespace caffe {
namespace {

TEST(HalfPrecisionTest, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float value = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(value)))) << h;
      continue;
    }
    ASSERT_EQ(FloatToHalf(value), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(HalfToFloat(0x3c00), 1.f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.f, -24));  // the smallest subnormal
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.f, -14));  // the smallest normal
  EXPECT_EQ(HalfToFloat(0x7bff), kLargestHalf);
  EXPECT_EQ(HalfToFloat(0xc000), -2.f);
}

TEST(HalfPrecisionTest, RoundsToNearestWithTiesToEven) {
  // Between 1 and 2 halves are 2^-10 apart: 1 + 2^-11 ties to 1 (even), 1 + 3 x 2^-11
  // to 1 + 2^-9 (even), and anything past a midpoint goes up.
  EXPECT_EQ(RoundToHalf(1.f + std::ldexp(1.f, -11)), 1.f);
  EXPECT_EQ(RoundToHalf(1.f + 3 * std::ldexp(1.f, -11)), 1.f + std::ldexp(1.f, -9));
  EXPECT_EQ(RoundToHalf(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20)), 1.f + std::ldexp(1.f, -10));
  // Subnormals: 2^-25 ties to 0, a little more goes to 2^-24, 3 x 2^-25 ties to 2^-23.
  EXPECT_EQ(RoundToHalf(std::ldexp(1.f, -25)), 0.f);
  EXPECT_EQ(RoundToHalf(std::ldexp(1.f, -25) * 1.001f), std::ldexp(1.f, -24));
  EXPECT_EQ(RoundToHalf(3 * std::ldexp(1.f, -25)), std::ldexp(1.f, -23));
  // A carry out of the mantissa moves to the next power of two.
  EXPECT_EQ(RoundToHalf(2.f - std::ldexp(1.f, -12)), 2.f);
  // Random values in range: the error is at most half a spacing and the result is the
  // nearer of the two neighbouring halves.
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> exponent(-20, 15.9f);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::exp2(exponent(rng)) * (i % 2 ? 1 : -1);
    const float r = RoundToHalf(x);
    const uint16_t h = FloatToHalf(x);
    const float next = HalfToFloat(static_cast<uint16_t>(h + 1));
    const float previous = HalfToFloat(static_cast<uint16_t>(h - 1));
    ASSERT_LE(std::fabs(x - r), std::fabs(x - next)) << x;
    ASSERT_LE(std::fabs(x - r), std::fabs(x - previous)) << x;
  }
}

TEST(HalfPrecisionTest, SaturatesBeyondTheRangeAndKeepsNanAndInfinity) {
  EXPECT_EQ(RoundToHalf(65519.f), kLargestHalf);  // rounds down anyway
  EXPECT_EQ(RoundToHalf(65520.f), kLargestHalf);  // would round to infinity
  EXPECT_EQ(RoundToHalf(1e30f), kLargestHalf);
  EXPECT_EQ(RoundToHalf(-70000.f), -kLargestHalf);
  EXPECT_EQ(RoundToHalf(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToHalf(-std::numeric_limits<float>::infinity()), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(RoundToHalf(std::nanf(""))));
  EXPECT_TRUE(std::signbit(RoundToHalf(-0.f)));
}

}  // namespace
}  // namespace caffe
