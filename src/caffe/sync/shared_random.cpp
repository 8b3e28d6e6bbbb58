#include "caffe/sync/shared_random.hpp"

#include <algorithm>
#include <random>
#include <unordered_set>

namespace caffe {

uint64_t SharedHash(uint64_t seed, int64_t iter, int64_t blob, uint64_t salt) {
  uint64_t h = SplitMix64(seed);
  h = SplitMix64(h ^ static_cast<uint64_t>(iter));
  h = SplitMix64(h ^ static_cast<uint64_t>(blob + 1));
  return SplitMix64(h ^ salt);
}

int LeaderFor(uint64_t seed, int64_t iter, int64_t blob, int world_size) {
  // The top bits of the hash are the best mixed; multiply-shift maps them to ranks
  // without modulo bias worth speaking of for small world sizes.
  const uint64_t h = SharedHash(seed, iter, blob, 0x1eade7ull);
  return static_cast<int>((static_cast<unsigned __int128>(h) * world_size) >> 64);
}

std::vector<int32_t> SharedRandomSubset(uint64_t seed, int64_t iter, int64_t blob, int64_t n,
                                        int64_t k, uint64_t salt) {
  std::vector<int32_t> out;
  if (k <= 0 || n <= 0) return out;
  k = std::min(k, n);
  std::mt19937_64 rng(SharedHash(seed, iter, blob, salt));
  if (k * 4 > n) {
    // Dense enough: choose by a partial shuffle of all indices.
    std::vector<int32_t> all(n);
    for (int64_t i = 0; i < n; ++i) all[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < k; ++i) {
      std::uniform_int_distribution<int64_t> pick(i, n - 1);
      std::swap(all[i], all[pick(rng)]);
    }
    out.assign(all.begin(), all.begin() + k);
  } else {
    // Floyd's algorithm: k draws, each a new distinct index.
    std::unordered_set<int32_t> chosen;
    chosen.reserve(k * 2);
    for (int64_t j = n - k; j < n; ++j) {
      std::uniform_int_distribution<int64_t> pick(0, j);
      const int32_t t = static_cast<int32_t>(pick(rng));
      if (!chosen.insert(t).second) chosen.insert(static_cast<int32_t>(j));
    }
    out.assign(chosen.begin(), chosen.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace caffe
