#include "caffe/sync/selection_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "caffe/sync/host_passes.hpp"
#include "caffe/sync/top_k.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void SelectionKernels::ComputeImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                                         const vector<const float*>& residuals, float epsilon,
                                         bool divide_by_weight) {
  offsets_.clear();
  sizes_.clear();
  total_ = 0;
  for (size_t b : blobs) {
    offsets_.push_back(total_);
    sizes_.push_back(params[b]->count());
    total_ += params[b]->count();
  }
  FillImportance(params, blobs, residuals, epsilon, divide_by_weight);
}

float VarianceToMean(double sum, double sum_squares, int64_t n) {
  if (n <= 0) return 0.f;
  const double mean = sum / n;
  if (mean <= 0) return 0.f;
  const double var = std::max(0.0, sum_squares / n - mean * mean);
  return static_cast<float>(var / mean);
}

vector<int64_t> SamplePositions(uint64_t seed, int64_t n, int64_t samples) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  vector<int64_t> positions(samples);
  for (int64_t& p : positions) p = pick(rng);
  return positions;
}

void HostSelectionKernels::FillImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                                          const vector<const float*>& residuals, float epsilon,
                                          bool divide_by_weight) {
  importance_.resize(total_);
  sums_.assign(blobs.size(), {0.0, 0.0});
  for (size_t j = 0; j < blobs.size(); ++j) {
    const float* v = residuals[blobs[j]];
    float* out = importance_.data() + offsets_[j];
    if (divide_by_weight) {
      // The shipped score: one pass gives the importances and their sums (the VMR).
      ImportanceOverWeight(v, params[blobs[j]]->cpu_data(), epsilon, sizes_[j], out,
                           &sums_[j].first, &sums_[j].second);
      continue;
    }
    ParallelFor(sizes_[j], [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = std::fabs(v[i]);
    });
    SumAndSquares(out, sizes_[j], &sums_[j].first, &sums_[j].second);
  }
}

void HostSelectionKernels::Suppress(size_t j, const vector<int32_t>& indices) {
  float* x = importance_.data() + offsets_[j];
  for (int32_t i : indices) x[i] = 0.f;
}

void HostSelectionKernels::Sums(size_t j, double* sum, double* sum_squares) {
  *sum = sums_[j].first;
  *sum_squares = sums_[j].second;
}

float HostSelectionKernels::KthLargest(ImportanceSpan span, int64_t k) {
  CAFFE_REQUIRE(k >= 1 && k <= span.count) << "k-th largest of " << span.count << " with k = " << k;
  // Selection on a copy: the importances stay in blob order for the index choice.
  scratch_.assign(importance_.begin() + span.begin, importance_.begin() + span.begin + span.count);
  auto nth = scratch_.begin() + (k - 1);
  std::nth_element(scratch_.begin(), nth, scratch_.end(), std::greater<float>());
  return *nth;
}

float HostSelectionKernels::KthLargestAt(ImportanceSpan span, const vector<int64_t>& positions,
                                         int64_t k) {
  const int64_t count = static_cast<int64_t>(positions.size());
  CAFFE_REQUIRE(k >= 1 && k <= count) << "k-th largest of " << count << " samples with k = " << k;
  scratch_.resize(count);
  const float* x = importance_.data() + span.begin;
  for (int64_t s = 0; s < count; ++s) scratch_[s] = x[positions[s]];
  auto nth = scratch_.begin() + (k - 1);
  std::nth_element(scratch_.begin(), nth, scratch_.end(), std::greater<float>());
  return *nth;
}

vector<int32_t> HostSelectionKernels::SelectAtLeast(size_t j, float threshold) {
  vector<int32_t> out;
  // x > 0 is x >= the smallest positive float.
  AppendAtLeast(importance_.data() + offsets_[j], sizes_[j],
                std::max(threshold, std::numeric_limits<float>::denorm_min()), &out);
  return out;
}

vector<int32_t> HostSelectionKernels::SelectTopK(size_t j, int64_t k, float* threshold) {
  const float* x = importance_.data() + offsets_[j];
  vector<int32_t> out = TopKIndices(x, sizes_[j], k);
  float smallest = std::numeric_limits<float>::max();
  for (int32_t i : out) smallest = std::min(smallest, x[i]);
  *threshold = out.empty() ? 0.f : smallest;
  return out;
}

#ifndef USE_CUDA
std::unique_ptr<SelectionKernels> CreateDeviceSelectionKernels() { return nullptr; }
#endif

}  // namespace caffe
