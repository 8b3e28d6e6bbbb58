// Sums over one short contiguous run of floats (a feature-map plane), for the layers
// that reduce over batch and space (BatchNorm, Scale).
//
// One running total is a serial chain: every addition waits for the one before it
// (several cycles each), and the compiler may not reorder float additions to break
// it. These keep kPlaneSumLanes independent partial sums, which vectorise, and add
// them up as a tree (the vectors in float, then the lanes in double). The order of
// additions depends on n alone, so a result does not depend on how many threads run
// the layer. A plane is short (hundreds of elements), so the float partial sums stay
// accurate; callers add the planes' totals in double.
#ifndef CAFFE_UTIL_PLANE_SUMS_HPP_
#define CAFFE_UTIL_PLANE_SUMS_HPP_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "caffe/util/parallel_for.hpp"

namespace caffe {

constexpr int kPlaneSumLanes = 32;

// The sum of x[0..n).
double PlaneSum(const float* x, int64_t n);

// The sum of (x[i] - center)^2 over [0, n), each deviation taken in float.
double PlaneSquaredDeviations(const float* x, int64_t n, float center);

// The sum of a[0..n) and the dot product of a and b.
void PlaneSumAndDot(const float* a, const float* b, int64_t n, double* sum_a, double* dot_ab);

// The same three for the channels of one channel block (Blob::channel_block): x holds
// n positions of `block` channels each, channel j's values at x[s * block + j], with
// block a multiple of 8. out[j] is bit for bit what the function above gives for
// channel j's n values as one contiguous plane (the same lanes, in the same order), so
// a blocked blob's statistics equal a plain one's.
void ChannelBlockSums(const float* x, int64_t n, int block, double* out);
void ChannelBlockSquaredDeviations(const float* x, int64_t n, int block, const float* centers,
                                   double* out);
void ChannelBlockSumsAndDots(const float* a, const float* b, int64_t n, int block,
                             double* sums, double* dots);

// Per-channel totals over a blob laid out (outer, channels, inner), for reductions
// over batch and space: totals[c * kTerms + t] is the sum over o of what
// plane(o, c, acc) adds to acc[t]. Rows are taken in fixed blocks of kRowsPerBlock and
// the blocks' partial sums added in order, so the result depends on the shape alone,
// not on the thread count. Threads split (block, channel) items in block-major order:
// each thread reads a contiguous stretch of the blob (split by channel alone, two
// threads read interleaved pieces of every row, and ran no faster than one).
constexpr int64_t kRowsPerBlock = 8;

template <int kTerms, typename PlaneFn>
std::vector<double> ChannelSums(int64_t outer, int64_t channels, int64_t inner,
                                const PlaneFn& plane) {
  const int64_t blocks = (outer + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<double> partial(blocks * channels * kTerms, 0.0);
  double* partials = partial.data();
  ParallelFor(
      blocks * channels,
      [=, &plane](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t block = item / channels, c = item % channels;
          const int64_t row_end = std::min(outer, (block + 1) * kRowsPerBlock);
          for (int64_t o = block * kRowsPerBlock; o < row_end; ++o) plane(o, c, partials + item * kTerms);
        }
      },
      MinItemsFor(kRowsPerBlock * inner));
  std::vector<double> totals(channels * kTerms, 0.0);
  for (int64_t block = 0; block < blocks; ++block) {
    for (int64_t i = 0; i < channels * kTerms; ++i) totals[i] += partial[block * channels * kTerms + i];
  }
  return totals;
}

// ChannelSums for a channel-blocked blob (channels a multiple of `block`): tile(o, cb,
// acc) adds to acc[j * kTerms + t] what plane(o, cb * block + j, ...) would add to
// acc[t]. Each channel's terms are added in the order ChannelSums adds them, so equal
// tiles give equal totals, bit for bit.
template <int kTerms, typename TileFn>
std::vector<double> ChannelBlockTotals(int64_t outer, int64_t channels, int64_t inner, int block,
                                       const TileFn& tile) {
  const int64_t blocks = (outer + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t channel_blocks = channels / block;
  std::vector<double> partial(blocks * channels * kTerms, 0.0);
  double* partials = partial.data();
  ParallelFor(
      blocks * channel_blocks,
      [=, &tile](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t row_block = item / channel_blocks, cb = item % channel_blocks;
          const int64_t row_end = std::min(outer, (row_block + 1) * kRowsPerBlock);
          double* acc = partials + (row_block * channels + cb * block) * kTerms;
          for (int64_t o = row_block * kRowsPerBlock; o < row_end; ++o) tile(o, cb, acc);
        }
      },
      MinItemsFor(kRowsPerBlock * inner * block));
  std::vector<double> totals(channels * kTerms, 0.0);
  for (int64_t row_block = 0; row_block < blocks; ++row_block) {
    for (int64_t i = 0; i < channels * kTerms; ++i) {
      totals[i] += partial[row_block * channels * kTerms + i];
    }
  }
  return totals;
}

// Per channel of a blob laid out (outer, channels, inner) in either layout
// (Blob::channel_block, 0 for plain): out[2 c] is the sum of a over channel c and
// out[2 c + 1] the dot product of a and b over it (0 when b is null). The gradient
// sums of BatchNorm and Scale; bit for bit the same in both layouts.
std::vector<double> ChannelSumsAndDots(int64_t outer, int64_t channels, int64_t inner, int block,
                                       const float* a, const float* b);

}  // namespace caffe

#endif  // CAFFE_UTIL_PLANE_SUMS_HPP_
