// The selection steps of the sparse gradient exchanges (docs/iwp.md steps 2-5, 8-9)
// as device kernels, built on CUB: importance, its sums for the variance-to-mean
// ratio, k-th largest value, exact top-k, threshold compaction, gather, scatter,
// clearing what was sent, and clip-and-accumulate. Each computes exactly what the
// CPU code of the exchanges computes (TopKIndices (top_k.hpp), HostResidualKernels,
// HostSelectionKernels), which stays the reference; SelectionKernels
// (selection_kernels.hpp) and ResidualKernels (residual_kernels.hpp) are where the two
// meet.
//
// Every pointer argument is a device pointer on the current device unless its
// comment says otherwise. Work is queued on the legacy default stream, where the
// layers run; functions that hand back a host value (a count, a threshold, sums)
// wait for it. No CUDA header is included here, so plain C++ (tests, the exchanges)
// can call these. CUDA builds only.
#ifndef CAFFE_SYNC_DEVICE_SELECTION_HPP_
#define CAFFE_SYNC_DEVICE_SELECTION_HPP_

#ifdef USE_CUDA

#include <cstdint>
#include <vector>

#include "caffe/util/device_buffer.hpp"

namespace caffe {

// Scratch reused across calls (grows to the largest blob seen, never shrinks): CUB's
// temporary storage, sort outputs, index lists and the scalars CUB writes.
struct DeviceSelectionWorkspace {
  DeviceBuffer cub_temp;
  DeviceBuffer sorted_keys;
  DeviceBuffer order_in, order_out;
  DeviceBuffer positions;
  DeviceBuffer scalars;
};

// importance[i] = |v[i]| / (|w[i]| + added), as IwpExchange computes it (added:
// epsilon), or |v[i]| / added when w is null.
void DeviceImportance(const float* v, const float* w, int64_t n, float added, float* importance);
// out[i] = |x[i]| (TOPK_ALLGATHER ranks by plain magnitude).
void DeviceAbs(const float* x, int64_t n, float* out);

// Sum and sum of squares of x, accumulated in double (the CPU does the same) by a
// CUB reduction, which gives the same bits on every run on the same device.
void DeviceSumAndSquares(const float* x, int64_t n, double* sum, double* sum_squares,
                         DeviceSelectionWorkspace* workspace);

// The k-th largest value of x (1 <= k <= n).
float DeviceKthLargest(const float* x, int64_t n, int64_t k, DeviceSelectionWorkspace* workspace);
// The k-th largest of x[positions[0]], x[positions[1]], ... (positions in host
// memory, repeats allowed: the sampled threshold mode draws with replacement).
float DeviceKthLargestAt(const float* x, const std::vector<int64_t>& positions, int64_t k,
                         DeviceSelectionWorkspace* workspace);

// The indices of the k largest importances, ties broken by lower index first, sorted
// ascending: the set TopKIndices (top_k.hpp) picks. Writes min(k, n) indices (none
// for k <= 0) to `indices` and returns how many; *kth_value (host) gets the smallest
// selected importance (0 when none is selected).
int64_t DeviceSelectTopK(const float* importance, int64_t n, int64_t k, int32_t* indices,
                         float* kth_value, DeviceSelectionWorkspace* workspace);
// Every index i with importance[i] >= threshold and > 0, ascending; `indices` must
// hold n. Returns how many.
int64_t DeviceSelectAtLeast(const float* importance, int64_t n, float threshold, int32_t* indices,
                            DeviceSelectionWorkspace* workspace);

// values[j] = source[indices[j]].
void DeviceGather(const float* source, const int32_t* indices, int64_t count, float* values);
// target[indices[j]] = values[j] * scale. Indices must be distinct.
void DeviceScatter(const float* values, const int32_t* indices, int64_t count, float scale,
                   float* target);
// target[indices[j]] += values[j] * scale. Indices must be distinct within one call
// (one rank's block); blocks from several ranks go in separate calls, in rank order,
// so the sums come out in the same order as on the CPU.
void DeviceScatterAdd(const float* values, const int32_t* indices, int64_t count, float scale,
                      float* target);
// v[indices[j]] = 0, and u[indices[j]] = 0 where u is not null (momentum masking).
void DeviceClearAt(const int32_t* indices, int64_t count, float* v, float* u);

// known[i] = |applied[i]| / (|w[i]| + epsilon), or |applied[i]| without
// divide_by_weight, at i = indices[j] (at i = j for j < count when indices is null).
void DeviceRecordImportance(const float* applied, const float* w, const int32_t* indices,
                            int64_t count, float epsilon, bool divide_by_weight, float* known);
// last_sent[indices[j]] = iter.
void DeviceMarkSent(const int32_t* indices, int64_t count, int32_t iter, int32_t* last_sent);
// x[i] = value.
void DeviceFillInt(int32_t* x, int64_t n, int32_t value);
// The smallest element of x and the sum of all (host results).
void DeviceMinAndSum(const int32_t* x, int64_t n, int64_t* min, int64_t* sum,
                     DeviceSelectionWorkspace* workspace);
// ResidualKernels::StochasticDraw's Poisson sample over one blob: index i is kept
// when DrawKeeps(DrawSeed(stream), i, weight_i, expected / sum of weights) (in float,
// shared_random.hpp), that is with probability min(1, expected * weight_i / sum),
// weight_i = (iter - last_sent[i]) * (known[i] + mean of known). Writes the kept
// indices ascending to `indices` (room for n) and returns how many.
int64_t DeviceStochasticDraw(const int32_t* last_sent, const float* known, int64_t n, int64_t iter,
                             double expected, uint64_t stream, int32_t* indices,
                             DeviceSelectionWorkspace* workspace);

// ResidualKernels::ClipAndAccumulate for one blob: when clip > 0 and the L2 norm of
// the gradient g exceeds clip, g is scaled to norm clip (in place, as on the CPU);
// then v += g, or with momentum correction (u not null) u = momentum * u + g; v += u.
// *not_finite (when not null) is set to 1 if some v is then not finite.
void DeviceClipAndAccumulate(float* g, int64_t n, float clip, float momentum, float* v, float* u,
                             int32_t* not_finite, DeviceSelectionWorkspace* workspace);
// ResidualKernels::LimitSelected on device data: at i = indices[j], where |diff[i]| >
// cap = scale * (|w[i]| + rms), diff[i] becomes +-cap and v[i] = local[j] * (1 - cap /
// |diff[i]|). Returns how many were cut short.
int64_t DeviceRateLimit(const int32_t* indices, int64_t count, const float* w, float rms,
                        float scale, const float* local, float* diff, float* v,
                        DeviceSelectionWorkspace* workspace);
// *out = 1 when any of the `count` flags is set, else 0 (one thread: count is the
// number of blobs).
void DeviceAnyFlagAsFloat(const int32_t* flags, int64_t count, float* out);

}  // namespace caffe

#endif  // USE_CUDA
#endif  // CAFFE_SYNC_DEVICE_SELECTION_HPP_
