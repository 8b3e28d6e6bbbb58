#include "caffe/sync/capture_probe.hpp"

#include <algorithm>
#include <functional>

#include <glog/logging.h>

namespace caffe {

namespace {

// The sum of the k largest of squares[begin, end) (reorders that range).
double SumOfLargest(std::vector<double>* squares, int64_t begin, int64_t end, int64_t k) {
  if (k <= 0) return 0;
  auto first = squares->begin() + begin;
  std::nth_element(first, first + (k - 1), squares->begin() + end, std::greater<double>());
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += first[i];
  return sum;
}

}  // namespace

CaptureShares MeasureCapture(const std::vector<float>& summed, const std::vector<uint8_t>& sent,
                             const std::vector<int64_t>& blob_begin,
                             const std::vector<float>* scale) {
  const int64_t n = static_cast<int64_t>(summed.size());
  CHECK_EQ(summed.size(), sent.size());
  CHECK(!blob_begin.empty() && blob_begin[0] == 0);
  if (scale) CHECK_EQ(summed.size(), scale->size());
  CaptureShares out;
  std::vector<double> squares(n);
  double total = 0, chosen = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = scale ? double(summed[i]) / (*scale)[i] : double(summed[i]);
    squares[i] = x * x;
    total += squares[i];
    if (sent[i]) chosen += squares[i];
  }
  if (!(total > 0)) return out;
  // Per blob first (it reorders only within each blob), then over everything.
  double in_blobs = 0;
  int64_t count = 0;
  for (size_t b = 0; b < blob_begin.size(); ++b) {
    const int64_t begin = blob_begin[b];
    const int64_t end = b + 1 < blob_begin.size() ? blob_begin[b + 1] : n;
    CHECK(begin <= end && end <= n) << "blob " << b << " lies outside the summed residual";
    int64_t k = 0;
    for (int64_t i = begin; i < end; ++i) k += sent[i] ? 1 : 0;
    in_blobs += SumOfLargest(&squares, begin, end, k);
    count += k;
  }
  const double best = SumOfLargest(&squares, 0, n, count);
  out.chosen = chosen / total;
  out.in_blobs = in_blobs / total;
  out.best = best / total;
  return out;
}

}  // namespace caffe
