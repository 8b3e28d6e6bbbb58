#include "caffe/sync/top_k.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "caffe/sync/host_passes.hpp"

namespace caffe {

namespace {

// Below this many scores a selection over a copy of all of them is as cheap as anything.
constexpr int64_t kSmallInput = 8192;
// Scores a sampled bound looks at.
constexpr int64_t kSamples = 2048;

// The indices (ascending) of everything strictly above `threshold` among `index`, then
// its ties in index order up to k in all. `index` is ascending; value[j] is the score
// of index[j].
std::vector<int32_t> AboveThenTies(const float* value, const int32_t* index, int64_t count,
                                   float threshold, int64_t k) {
  int64_t above = 0;
  for (int64_t j = 0; j < count; ++j) above += value[j] > threshold;
  int64_t ties_left = k - above;
  std::vector<int32_t> out;
  out.reserve(k);
  for (int64_t j = 0; j < count; ++j) {
    if (value[j] > threshold) {
      out.push_back(index[j]);
    } else if (value[j] == threshold && ties_left > 0) {
      out.push_back(index[j]);
      --ties_left;
    }
  }
  return out;
}

// A score that at least k scores likely reach, from a sample: the value that ranks a
// little below k / n among kSamples scores, one from each of kSamples equal stretches
// (at a position within it that varies from stretch to stretch, so that a blob's
// periodic structure, a filter's length, cannot line the sample up). Only a bound for
// the candidates: the selection stays exact whatever it returns.
float SampledBound(const float* score, int64_t n, int64_t k) {
  std::vector<float> sample(kSamples);
  const int64_t stretch = n / kSamples;
  for (int64_t s = 0; s < kSamples; ++s) sample[s] = score[(s * n) / kSamples + (s * 7919) % stretch];
  // Expected k / n * kSamples sampled scores lie at or above the k-th largest; take a
  // quarter more and three standard deviations, so that a second pass (over all) is rare
  // while the candidates stay few.
  const double expected = static_cast<double>(k) / n * kSamples;
  const int64_t rank = static_cast<int64_t>(std::ceil(1.25 * expected + 3 * std::sqrt(expected) + 4));
  if (rank >= kSamples) return -INFINITY;
  std::nth_element(sample.begin(), sample.begin() + rank, sample.end(), std::greater<float>());
  return sample[rank];
}

}  // namespace

std::vector<int32_t> TopKIndices(const float* score, int64_t n, int64_t k) {
  std::vector<int32_t> out;
  if (k <= 0) return out;
  if (k >= n) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  // The candidates: every score at or above a sampled bound. When at least k are, the
  // k-th largest of all is among them, and so is every score that ties or beats it:
  // the selection over the candidates is the selection over all. Otherwise all scores
  // are the candidates.
  std::vector<int32_t> index;
  const float bound = n > kSmallInput ? SampledBound(score, n, k) : -INFINITY;
  if (bound > -INFINITY) {
    index.reserve(static_cast<size_t>(2.5 * k) + 64);
    AppendAtLeast(score, n, bound, &index);
  }
  std::vector<float> value;
  if (static_cast<int64_t>(index.size()) >= k) {
    value.resize(index.size());
    for (size_t j = 0; j < index.size(); ++j) value[j] = score[index[j]];
  } else {
    index.resize(n);
    std::iota(index.begin(), index.end(), 0);
    value.assign(score, score + n);
  }
  const int64_t count = static_cast<int64_t>(index.size());
  std::vector<float> scratch(value);
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<float>());
  return AboveThenTies(value.data(), index.data(), count, scratch[k - 1], k);
}

}  // namespace caffe
