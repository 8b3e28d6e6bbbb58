// Block-scaled 8-bit values on the wire (value_encoding: INT8): the receiver decodes
// exactly what the sender says arrives, each value within half a step of its block's
// scale, the block's largest magnitude exactly, zero blocks stay zero, a non-finite
// value poisons its block only, and the byte count is one byte a value plus a float
// a block.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "caffe/sync/block_int8.hpp"

namespace caffe {
namespace {

using std::vector;

TEST(BlockInt8Test, BytesAreOneAValueAndAFloatABlock) {
  EXPECT_EQ(BlockInt8Bytes(0), 0);
  EXPECT_EQ(BlockInt8Bytes(1), 5);
  EXPECT_EQ(BlockInt8Bytes(64), 68);
  EXPECT_EQ(BlockInt8Bytes(65), 65 + 8);
  EXPECT_EQ(BlockInt8Bytes(1000), 1000 + 16 * 4);
}

TEST(BlockInt8Test, DecodesWhatTheSenderSaysArrivesWithinHalfAStep) {
  for (int64_t count : {1, 63, 64, 65, 200}) {
    vector<float> in(count);
    std::mt19937 rng(static_cast<unsigned>(count));
    std::normal_distribution<float> dist(0, 1);
    for (int64_t i = 0; i < count; ++i) in[i] = dist(rng) * (i % 7 == 0 ? 1e-3f : 0.05f);
    vector<uint8_t> wire(BlockInt8Bytes(count));
    vector<float> arrives(count), decoded(count, -1.f);
    EncodeBlockInt8(in.data(), count, wire.data(), arrives.data());
    DecodeBlockInt8(wire.data(), count, decoded.data());
    for (int64_t begin = 0; begin < count; begin += kInt8BlockValues) {
      const int64_t end = std::min(count, begin + kInt8BlockValues);
      float largest = 0;
      int64_t where = begin;
      for (int64_t i = begin; i < end; ++i) {
        if (std::fabs(in[i]) > largest) largest = std::fabs(in[i]), where = i;
      }
      const float step = largest / 127;
      EXPECT_NEAR(decoded[where], in[where], 1e-6f * largest) << "the largest arrives whole";
      for (int64_t i = begin; i < end; ++i) {
        ASSERT_EQ(decoded[i], arrives[i]) << count << " " << i;
        ASSERT_LE(std::fabs(decoded[i] - in[i]), 0.5f * step * (1 + 1e-5f)) << count << " " << i;
      }
    }
  }
}

TEST(BlockInt8Test, ZeroBlocksStayZeroAndNonFiniteBlocksDecodeToNaN) {
  const int64_t count = 3 * kInt8BlockValues;
  vector<float> in(count, 0.f);
  for (int64_t i = kInt8BlockValues; i < count; ++i) in[i] = 0.25f;
  in[kInt8BlockValues + 5] = std::numeric_limits<float>::infinity();
  in[2 * kInt8BlockValues + 1] = 1.f;  // sets the third block's scale, 1 / 127
  vector<uint8_t> wire(BlockInt8Bytes(count));
  vector<float> arrives(count), decoded(count);
  EncodeBlockInt8(in.data(), count, wire.data(), arrives.data());
  DecodeBlockInt8(wire.data(), count, decoded.data());
  for (int64_t i = 0; i < kInt8BlockValues; ++i) ASSERT_EQ(decoded[i], 0.f) << i;
  for (int64_t i = kInt8BlockValues; i < 2 * kInt8BlockValues; ++i) {
    ASSERT_TRUE(std::isnan(decoded[i])) << i;
    ASSERT_TRUE(std::isnan(arrives[i])) << i;
  }
  EXPECT_EQ(decoded[2 * kInt8BlockValues + 1], 1.f);
  // 0.25 is 31.75 steps of 1/127: it arrives as 32 steps.
  EXPECT_FLOAT_EQ(decoded[2 * kInt8BlockValues], 32.f / 127.f);
}

TEST(BlockInt8Test, SmallValuesBesideALargeOneRoundToZero) {
  vector<float> in(kInt8BlockValues, 1e-4f);
  in[10] = -1.f;
  vector<uint8_t> wire(BlockInt8Bytes(kInt8BlockValues));
  vector<float> arrives(kInt8BlockValues);
  EncodeBlockInt8(in.data(), kInt8BlockValues, wire.data(), arrives.data());
  EXPECT_EQ(arrives[0], 0.f) << "1e-4 is far below half a step of 1/127";
  // A small negative value rounds to +0, the bits the receiver decodes.
  in[0] = -1e-4f;
  EncodeBlockInt8(in.data(), kInt8BlockValues, wire.data(), arrives.data());
  EXPECT_FALSE(std::signbit(arrives[0]));
  EXPECT_EQ(arrives[10], -1.f);
}

}  // namespace
}  // namespace caffe
