// The single passes over a parameter blob that the host exchange kernels are made of
// (HostResidualKernels, HostSelectionKernels, TopKIndices), written so that they
// vectorise: a running double total is a chain of dependent additions (several
// cycles each) that the compiler may not reorder, and it cost more than the loads.
// Sums here keep 16 float lanes over blocks of kSumBlock elements and add each block's
// lanes into double totals as a tree, so the order of additions depends on n alone:
// every rank, whatever its thread count, gets the same bits, and a blob's total is as
// accurate as a running double sum to well below what its users resolve (a
// variance-to-mean ratio sent as a float, a root-mean-square weight, the stochastic
// draw's weights against 24-bit uniforms).
#ifndef CAFFE_SYNC_HOST_PASSES_HPP_
#define CAFFE_SYNC_HOST_PASSES_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

// Elements per block of float partial sums (each lane adds kSumBlock / 16 values).
constexpr int64_t kSumBlock = 1024;

// The sum and the sum of squares of x[0, n), in double.
void SumAndSquares(const float* x, int64_t n, double* sum, double* sum_squares);
// The mean of the squared values of x[0, n) (0 for n = 0).
double MeanSquare(const float* x, int64_t n);

// v += g over [0, n); returns whether every resulting v is finite.
bool AccumulateChecked(const float* g, int64_t n, float* v);

// out = |v| / (|w| + epsilon) over [0, n), with the sum and sum of squares of out.
void ImportanceOverWeight(const float* v, const float* w, float epsilon, int64_t n, float* out,
                          double* sum, double* sum_squares);

// The indices i (ascending) with x[i] >= threshold, appended to `out`. A NaN is never
// at least anything.
void AppendAtLeast(const float* x, int64_t n, float threshold, std::vector<int32_t>* out);

// The stochastic draw: appends each i (ascending) that DrawKeeps(seed, i, weight_i,
// scale) (shared_random.hpp), weight_i = (iter - last[i]) x (known[i] + mean_known) in
// float, or the age alone when known is null; the same set, bit for bit, as that
// function coordinate by coordinate.
void AppendStochasticDraw(const int32_t* last, const float* known, int64_t n, int64_t iter,
                          float mean_known, float scale, uint32_t seed,
                          std::vector<int32_t>* out);

// The stochastic draw's sums over one blob: sum of known[i], of (iter - last[i]) and of
// (iter - last[i]) * known[i] (known may be null: its sums are then 0).
void AgeSums(const int32_t* last, const float* known, int64_t n, int64_t iter, double* sum_known,
             double* sum_age, double* sum_age_known);

}  // namespace caffe

#endif  // CAFFE_SYNC_HOST_PASSES_HPP_
