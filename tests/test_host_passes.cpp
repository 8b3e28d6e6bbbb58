// The vectorised passes of the host exchange kernels (host_passes.hpp) and the exact
// top-k built on them, against element-by-element references, at sizes that reach every
// vector width's tail and the block boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "caffe/common.hpp"
#include "caffe/sync/host_passes.hpp"
#include "caffe/sync/shared_random.hpp"
#include "caffe/sync/top_k.hpp"

namespace caffe {
namespace {

const int64_t kSizes[] = {0, 1, 7, 8, 15, 16, 17, 1023, 1024, 1025, 4097, 100003};

vector<float> Normal(int64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, sigma);
  vector<float> x(n);
  for (float& value : x) value = normal(rng);
  return x;
}

// The k largest by a full sort, ties to the lower index: what TopKIndices promises.
vector<int32_t> SortedTopK(const vector<float>& score, int64_t k) {
  vector<int32_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return score[a] > score[b]; });
  order.resize(std::min<size_t>(k, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

TEST(HostPassesTest, SumsMatchDoubleSumsClosely) {
  for (int64_t n : kSizes) {
    const vector<float> x = Normal(n, 3.f, 1);
    double sum = 0, squares = 0, ref_sum = 0, ref_squares = 0;
    SumAndSquares(x.data(), n, &sum, &squares);
    for (float v : x) {
      ref_sum += v;
      ref_squares += double(v) * v;
    }
    EXPECT_NEAR(sum, ref_sum, 1e-5 * (1 + std::sqrt(ref_squares))) << "n " << n;
    EXPECT_NEAR(squares, ref_squares, 1e-6 * ref_squares + 1e-12) << "n " << n;
    EXPECT_NEAR(MeanSquare(x.data(), n), n ? ref_squares / n : 0.0, 1e-6 * (n ? ref_squares / n : 1)) << "n " << n;
  }
}

TEST(HostPassesTest, AccumulateAddsAndSeesEveryNonFiniteValue) {
  for (int64_t n : kSizes) {
    const vector<float> g = Normal(n, 1.f, 2);
    vector<float> v = Normal(n, 1.f, 3), expected = v;
    for (int64_t i = 0; i < n; ++i) expected[i] += g[i];
    EXPECT_TRUE(AccumulateChecked(g.data(), n, v.data())) << "n " << n;
    EXPECT_EQ(v, expected) << "n " << n;
    // One NaN or Inf anywhere, vector body or tail, is seen.
    for (int64_t at : {int64_t(0), n / 2, n - 1}) {
      if (n == 0) continue;
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        vector<float> gb = g, vb = v;
        gb[at] = bad;
        EXPECT_FALSE(AccumulateChecked(gb.data(), n, vb.data())) << "n " << n << " at " << at;
      }
    }
  }
}

TEST(HostPassesTest, ImportanceIsExactAndItsSumsAgree) {
  for (int64_t n : kSizes) {
    const vector<float> v = Normal(n, 0.01f, 4), w = Normal(n, 0.05f, 5);
    vector<float> out(n);
    double sum = 0, squares = 0;
    ImportanceOverWeight(v.data(), w.data(), 1e-6f, n, out.data(), &sum, &squares);
    double ref_sum = 0, ref_squares = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float expected = std::fabs(v[i]) / (std::fabs(w[i]) + 1e-6f);
      ASSERT_EQ(out[i], expected) << "n " << n << " i " << i;
      ref_sum += expected;
      ref_squares += double(expected) * expected;
    }
    EXPECT_NEAR(sum, ref_sum, 1e-5 * (1 + ref_sum)) << "n " << n;
    EXPECT_NEAR(squares, ref_squares, 1e-5 * (1 + ref_squares)) << "n " << n;
  }
}

TEST(HostPassesTest, AtLeastFindsExactlyTheElementsAtOrAboveTheThreshold) {
  for (int64_t n : kSizes) {
    vector<float> x = Normal(n, 1.f, 6);
    if (n > 3) x[n / 3] = std::numeric_limits<float>::quiet_NaN();  // never at least anything
    for (float threshold : {-10.f, 0.f, 1.5f, 2.5f, 100.f}) {
      vector<int32_t> got = {-7};  // appended to, not replaced
      AppendAtLeast(x.data(), n, threshold, &got);
      vector<int32_t> expected = {-7};
      for (int64_t i = 0; i < n; ++i) {
        if (x[i] >= threshold) expected.push_back(static_cast<int32_t>(i));
      }
      EXPECT_EQ(got, expected) << "n " << n << " threshold " << threshold;
    }
  }
}

// A blob's last-sent iterations, from `newest` down to `spread` - 1 before it, and
// known importances in [0, 1000 x scale).
void RandomHistory(int64_t n, int32_t newest, int32_t spread, float scale, uint32_t seed,
                   vector<int32_t>* last, vector<float>* known) {
  std::mt19937 rng(seed);
  last->resize(n);
  known->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    (*last)[i] = newest - static_cast<int32_t>(rng() % spread);
    (*known)[i] = (rng() % 1000) * scale;
  }
}

TEST(HostPassesTest, AgeSumsMatchTheirDefinition) {
  for (int64_t n : kSizes) {
    vector<int32_t> last;
    vector<float> known;
    RandomHistory(n, 900, 400, 1e-4f, 7, &last, &known);
    double k = 0, a = 0, ak = 0, rk = 0, ra = 0, rak = 0;
    AgeSums(last.data(), known.data(), n, 901, &k, &a, &ak);
    for (int64_t i = 0; i < n; ++i) {
      rk += known[i];
      ra += 901 - last[i];
      rak += double(901 - last[i]) * known[i];
    }
    EXPECT_NEAR(k, rk, 1e-6 * (1 + rk)) << "n " << n;
    EXPECT_EQ(a, ra) << "n " << n << ": ages are whole numbers, their sum exact";
    EXPECT_NEAR(ak, rak, 1e-6 * (1 + rak)) << "n " << n;
    AgeSums(last.data(), nullptr, n, 901, &k, &a, &ak);
    EXPECT_EQ(k, 0.0);
    EXPECT_EQ(ak, 0.0);
    EXPECT_EQ(a, ra);
  }
}

// The vectorised draw keeps exactly the coordinates DrawKeeps keeps one by one (the
// device kernel evaluates DrawKeeps too), and about as many as expected.
TEST(HostPassesTest, StochasticDrawIsDrawKeepsCoordinateByCoordinate) {
  for (int64_t n : kSizes) {
    vector<int32_t> last;
    vector<float> known;
    RandomHistory(n, 500, 300, 1e-5f, 8, &last, &known);
    if (n > 5) last[5] = -200000000;  // waited so long that p >= 1: kept for sure
    for (bool by_age : {false, true}) {
      const float mean = 0.004f, scale = 2e-5f;
      const uint32_t seed = DrawSeed(0x1234567887654321ull + n);
      vector<int32_t> got;
      AppendStochasticDraw(last.data(), by_age ? nullptr : known.data(), n, 501, mean, scale, seed, &got);
      vector<int32_t> expected;
      double mean_count = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float age = static_cast<float>(501 - last[i]);
        const float weight = by_age ? age : age * (known[i] + mean);
        mean_count += std::min(1.f, scale * weight);
        if (DrawKeeps(seed, static_cast<uint32_t>(i), weight, scale)) expected.push_back(static_cast<int32_t>(i));
      }
      EXPECT_EQ(got, expected) << "n " << n << (by_age ? " by age" : "");
      if (n > 5) {
        EXPECT_TRUE(std::binary_search(got.begin(), got.end(), 5)) << "p >= 1 is always kept";
      }
      if (n >= 100003) {
        EXPECT_NEAR(static_cast<double>(got.size()), mean_count, 5 * std::sqrt(mean_count));
      }
    }
  }
}

TEST(HostPassesTest, DrawUniformIsUniform) {
  // 64 bins over 2^20 coordinates of one stream: each within 6 standard deviations,
  // and the next stream is another sequence.
  const int64_t n = 1 << 20;
  vector<int64_t> bins(64, 0);
  int64_t same = 0;
  const uint32_t a = DrawSeed(SharedHash(1, 10, 2, 3)), b = DrawSeed(SharedHash(1, 11, 2, 3));
  for (int64_t i = 0; i < n; ++i) {
    const float u = DrawUniform(a, static_cast<uint32_t>(i));
    ASSERT_GE(u, 0.f);
    ASSERT_LT(u, 1.f);
    ++bins[static_cast<int>(u * 64)];
    same += u == DrawUniform(b, static_cast<uint32_t>(i));
  }
  const double expected = n / 64.0;
  for (int64_t count : bins) EXPECT_NEAR(count, expected, 6 * std::sqrt(expected));
  EXPECT_LT(same, 200);
}

// The candidate search must not change the answer: the exact top-k, ties to the lower
// index, against a full sort, on inputs made to defeat the sampled bound (ties,
// zeros, a periodic blob, the largest values crowded into one stretch).
TEST(TopKIndicesTest, EqualsAFullSortOnAdversarialInputs) {
  std::mt19937 rng(9);
  for (int64_t n : {int64_t(9000), int64_t(20000), int64_t(100003)}) {
    vector<vector<float>> inputs;
    inputs.push_back(Normal(n, 1.f, 10));
    vector<float> ties(n);
    for (float& x : ties) x = static_cast<float>(rng() % 5);
    inputs.push_back(ties);
    vector<float> zeros(n, 0.f);
    for (int64_t i = 0; i < n; i += 97) zeros[i] = 1.f + (i % 13);
    inputs.push_back(zeros);
    vector<float> periodic(n);
    for (int64_t i = 0; i < n; ++i) periodic[i] = (i % 2048 == 7) ? 100.f + i : 0.5f;
    inputs.push_back(periodic);
    vector<float> crowded = Normal(n, 1.f, 11);
    for (int64_t i = n / 2; i < n / 2 + n / 20; ++i) crowded[i] = 50.f + std::fabs(crowded[i]);
    inputs.push_back(crowded);
    for (size_t c = 0; c < inputs.size(); ++c) {
      for (int64_t k : {int64_t(1), n / 1000, n / 64, n / 20, n / 3, n - 1}) {
        if (k < 1) continue;
        EXPECT_EQ(TopKIndices(inputs[c].data(), n, k), SortedTopK(inputs[c], k))
            << "input " << c << " n " << n << " k " << k;
      }
    }
  }
}

}  // namespace
}  // namespace caffe
