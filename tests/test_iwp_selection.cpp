// The single-process parts of IWP: index encodings, exact top-k with deterministic
// ties, the layer-wise budget split, and the shared-seed choices.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "caffe/exchanges/iwp_exchange.hpp"
#include "caffe/sync/index_codec.hpp"
#include "caffe/sync/shared_random.hpp"
#include "caffe/sync/top_k.hpp"

namespace caffe {
namespace {

vector<int32_t> RandomSortedSubset(int64_t n, int64_t k, uint64_t seed) {
  return SharedRandomSubset(seed, 0, 0, n, k, 1);
}

TEST(IndexCodecTest, EveryEncodingRoundTrips) {
  for (int64_t n : {1, 7, 64, 1000, 100003}) {
    for (double density : {0.0, 0.01, 0.2, 0.9, 1.0}) {
      const vector<int32_t> indices = RandomSortedSubset(n, static_cast<int64_t>(density * n), n);
      for (auto encoding : {SyncParameter::INDEX, SyncParameter::BITMAP, SyncParameter::DELTA,
                            SyncParameter::RICE}) {
        std::string wire = "prefix";
        EncodeIndices(indices, n, encoding, &wire);
        EXPECT_EQ(static_cast<int64_t>(wire.size()) - 6, EncodedIndexBytes(encoding, indices, n));
        vector<int32_t> decoded;
        const int64_t used = DecodeIndices(wire.data() + 6, static_cast<int64_t>(wire.size()) - 6,
                                           encoding, static_cast<int64_t>(indices.size()), n, &decoded);
        EXPECT_EQ(used, static_cast<int64_t>(wire.size()) - 6);
        EXPECT_EQ(decoded, indices) << "n " << n << " density " << density << " encoding " << encoding;
      }
    }
  }
}

TEST(IndexCodecTest, AutoPicksTheSmallest) {
  const int64_t n = 1 << 16;
  // Sparse and spread out: varint gaps beat int32 offsets and the bitmap, and the
  // Rice code beats whole-byte varints (under 8 bits per index at 1/64, and about 2
  // bits more for a set 4x sparser, where varints need a second byte for most gaps).
  const vector<int32_t> sparse = RandomSortedSubset(n, n / 64, 3);
  EXPECT_EQ(ChooseIndexEncoding(SyncParameter::AUTO, sparse, n), SyncParameter::RICE);
  EXPECT_LT(EncodedIndexBytes(SyncParameter::DELTA, sparse, n),
            EncodedIndexBytes(SyncParameter::INDEX, sparse, n) / 3);
  EXPECT_LT(EncodedIndexBytes(SyncParameter::RICE, sparse, n), static_cast<int64_t>(sparse.size()));
  const vector<int32_t> sparser = RandomSortedSubset(n, n / 256, 5);
  EXPECT_LT(EncodedIndexBytes(SyncParameter::RICE, sparser, n),
            0.75 * EncodedIndexBytes(SyncParameter::DELTA, sparser, n));
  // Dense: one bit per element wins.
  const vector<int32_t> dense = RandomSortedSubset(n, n / 2, 4);
  EXPECT_EQ(ChooseIndexEncoding(SyncParameter::AUTO, dense, n), SyncParameter::BITMAP);
  // Far-apart indices need multi-byte varints: 1 + 3 + 3 bytes, still under 3 x 4;
  // the Rice code ties (a parameter byte and 48 bits), and ties keep the earlier.
  const vector<int32_t> few = {0, 40000, 65000};
  EXPECT_EQ(EncodedIndexBytes(SyncParameter::DELTA, few, n), 7);
  EXPECT_EQ(EncodedIndexBytes(SyncParameter::RICE, few, n), 7);
  EXPECT_EQ(ChooseIndexEncoding(SyncParameter::AUTO, few, n), SyncParameter::DELTA);
  // An empty set costs nothing as offsets; AUTO keeps INDEX on ties.
  EXPECT_EQ(ChooseIndexEncoding(SyncParameter::AUTO, {}, n), SyncParameter::INDEX);
  // An explicit choice is kept.
  EXPECT_EQ(ChooseIndexEncoding(SyncParameter::BITMAP, sparse, n), SyncParameter::BITMAP);
}

TEST(IndexCodecTest, CorruptMessagesAreErrors) {
  vector<int32_t> out;
  const std::string bad_index("\x05\x00\x00\x00\x02\x00\x00\x00", 8);  // 5 then 2: not increasing
  EXPECT_THROW(DecodeIndices(bad_index.data(), 8, SyncParameter::INDEX, 2, 10, &out), Error);
  EXPECT_THROW(DecodeIndices(bad_index.data(), 4, SyncParameter::INDEX, 2, 10, &out), Error);
  const std::string bitmap("\xff", 1);  // 8 bits set, header says 3
  EXPECT_THROW(DecodeIndices(bitmap.data(), 1, SyncParameter::BITMAP, 3, 8, &out), Error);
  const std::string delta("\x80\x80", 2);  // unterminated varint
  EXPECT_THROW(DecodeIndices(delta.data(), 2, SyncParameter::DELTA, 1, 1000, &out), Error);
  const std::string rice("\x02\xff\xff", 3);  // parameter 2, then ones only: no gap ends
  EXPECT_THROW(DecodeIndices(rice.data(), 3, SyncParameter::RICE, 1, 1 << 20, &out), Error);
  const std::string far("\x02\x0f", 2);  // a gap of 16 or more in a blob of 5
  EXPECT_THROW(DecodeIndices(far.data(), 2, SyncParameter::RICE, 1, 5, &out), Error);
  const std::string huge("\x1f", 1);  // parameter 31
  EXPECT_THROW(DecodeIndices(huge.data(), 1, SyncParameter::RICE, 0, 5, &out), Error);
}

TEST(TopKIndicesTest, ExactCountAndDeterministicTies) {
  const vector<float> importance = {0.5f, 2.f, 1.f, 1.f, 3.f, 1.f, 0.f, 1.f};
  // Top-4: 3 and 2 are above the threshold 1; two of the four 1s join, lowest first.
  EXPECT_EQ(TopKIndices(importance.data(), 8, 4), (vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(TopKIndices(importance.data(), 8, 1), (vector<int32_t>{4}));
  EXPECT_EQ(TopKIndices(importance.data(), 8, 8).size(), 8u);
  EXPECT_TRUE(TopKIndices(importance.data(), 8, 0).empty());
  // Large random input: exactly k, and nothing outside beats anything inside.
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> level(0, 50);  // many ties
  vector<float> x(10000);
  for (float& v : x) v = static_cast<float>(level(rng));
  const vector<int32_t> chosen = TopKIndices(x.data(), 10000, 321);
  ASSERT_EQ(chosen.size(), 321u);
  vector<bool> in(10000, false);
  float min_in = 1e9f;
  for (int32_t i : chosen) {
    in[i] = true;
    min_in = std::min(min_in, x[i]);
  }
  for (int i = 0; i < 10000; ++i) {
    if (!in[i]) {
      EXPECT_LE(x[i], min_in);
    }
  }
}

TEST(SplitBudgetTest, SumsToTheBudgetAndFollowsTheVmr) {
  const vector<int64_t> sizes = {1000, 1000, 5000};
  // Exponent 0: every blob gets the same density.
  vector<int64_t> k = IwpExchange::SplitBudget(sizes, {1, 4, 2}, 70, 0.0);
  EXPECT_EQ(std::accumulate(k.begin(), k.end(), int64_t{0}), 70);
  EXPECT_EQ(k, (vector<int64_t>{10, 10, 50}));
  // Positive exponent: the peaked blob (VMR 4) earns a larger share than its size.
  k = IwpExchange::SplitBudget(sizes, {1, 4, 2}, 70, 1.0);
  EXPECT_EQ(std::accumulate(k.begin(), k.end(), int64_t{0}), 70);
  EXPECT_GT(k[1], 2 * k[0]);
  // Clamping: a share above the blob's size is capped and the rest redistributed.
  k = IwpExchange::SplitBudget({10, 1000}, {1000, 1}, 500, 2.0);
  EXPECT_EQ(k[0], 10);
  EXPECT_EQ(k[0] + k[1], 500);
  // Every blob sends at least one element.
  k = IwpExchange::SplitBudget({1000, 1000}, {0, 5}, 100, 1.0);
  EXPECT_GE(k[0], 1);
  EXPECT_EQ(k[0] + k[1], 100);
}

TEST(SharedRandomTest, SubsetsAreDistinctSortedAndRepeatable) {
  for (int64_t k : {0, 1, 10, 900, 1000}) {
    const vector<int32_t> a = SharedRandomSubset(9, 5, 2, 1000, k, 0);
    const vector<int32_t> b = SharedRandomSubset(9, 5, 2, 1000, k, 0);
    EXPECT_EQ(a, b);
    ASSERT_EQ(static_cast<int64_t>(a.size()), k);
    for (size_t i = 1; i < a.size(); ++i) EXPECT_LT(a[i - 1], a[i]);
  }
  EXPECT_NE(SharedRandomSubset(9, 5, 2, 1000, 10, 0), SharedRandomSubset(9, 6, 2, 1000, 10, 0));
}

}  // namespace
}  // namespace caffe
