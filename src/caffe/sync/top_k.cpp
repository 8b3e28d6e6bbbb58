#include "caffe/sync/top_k.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

namespace caffe {

std::vector<int32_t> TopKIndices(const float* score, int64_t n, int64_t k) {
  std::vector<int32_t> out;
  if (k <= 0) return out;
  if (k >= n) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  std::vector<float> scratch(score, score + n);
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(),
                   std::greater<float>());
  const float threshold = scratch[k - 1];
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i) above += score[i] > threshold;
  // Everything strictly above the k-th value, then its ties in index order up to k.
  int64_t ties_left = k - above;
  out.reserve(k);
  for (int64_t i = 0; i < n; ++i) {
    if (score[i] > threshold) {
      out.push_back(static_cast<int32_t>(i));
    } else if (score[i] == threshold && ties_left > 0) {
      out.push_back(static_cast<int32_t>(i));
      --ties_left;
    }
  }
  return out;
}

}  // namespace caffe
