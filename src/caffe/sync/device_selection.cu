// Device kernels of the sparse exchanges' selection (see device_selection.hpp). The
// orderings and tie rules are those of the CPU code; comments say why each CUB call
// reproduces them.
#include "caffe/sync/device_selection.hpp"

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <limits>

#include "caffe/sync/shared_random.hpp"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// CUB's two-phase calls: the first asks how much temporary storage the second needs.
template <typename CubCall>
void RunCub(DeviceBuffer* temp, CubCall call) {
  size_t bytes = 0;
  CUDA_CHECK(call(nullptr, bytes));
  temp->Reserve(std::max<size_t>(bytes, 1));
  CUDA_CHECK(call(temp->data(), bytes));
  CUDA_CHECK(cudaPeekAtLastError());
}

template <typename T>
T ReadBack(const T* device_value) {
  T host;
  CUDA_CHECK(cudaMemcpy(&host, device_value, sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// Bits needed for values in [0, n): sorting indices looks at no more than these.
int IndexBits(int64_t n) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

__global__ void ImportanceKernel(const float* v, const float* w, int64_t n, float epsilon,
                                 float* importance) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    importance[i] = fabsf(v[i]) / ((w != nullptr ? fabsf(w[i]) : 0.f) + epsilon);
  }
}

__global__ void AbsKernel(const float* x, int64_t n, float* out) {
  CUDA_GRID_STRIDE_LOOP(i, n) { out[i] = fabsf(x[i]); }
}

__global__ void IotaKernel(int64_t n, int32_t* out) {
  CUDA_GRID_STRIDE_LOOP(i, n) { out[i] = static_cast<int32_t>(i); }
}

__global__ void GatherAtKernel(const float* source, const int64_t* positions, int64_t count,
                               float* values) {
  CUDA_GRID_STRIDE_LOOP(j, count) { values[j] = source[positions[j]]; }
}

__global__ void GatherKernel(const float* source, const int32_t* indices, int64_t count,
                             float* values) {
  CUDA_GRID_STRIDE_LOOP(j, count) { values[j] = source[indices[j]]; }
}

__global__ void ScatterKernel(const float* values, const int32_t* indices, int64_t count,
                              float scale, float* target) {
  CUDA_GRID_STRIDE_LOOP(j, count) { target[indices[j]] = values[j] * scale; }
}

__global__ void ScatterAddKernel(const float* values, const int32_t* indices, int64_t count,
                                 float scale, float* target) {
  // Distinct indices within one call: no two threads touch the same element, so no
  // atomics and no order dependence.
  CUDA_GRID_STRIDE_LOOP(j, count) { target[indices[j]] += values[j] * scale; }
}

__global__ void ClearAtKernel(const int32_t* indices, int64_t count, float* v, float* u) {
  CUDA_GRID_STRIDE_LOOP(j, count) {
    v[indices[j]] = 0.f;
    if (u != nullptr) u[indices[j]] = 0.f;
  }
}

__global__ void ScaleAndAccumulateKernel(float* g, int64_t n, float scale, float momentum, float* v,
                                         float* u, int32_t* not_finite) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    // scale is exactly 1 when nothing is clipped, and g * 1 == g bit for bit.
    const float gi = g[i] * scale;
    g[i] = gi;
    float vi;
    if (u != nullptr) {
      const float ui = momentum * u[i] + gi;
      u[i] = ui;
      vi = v[i] + ui;
    } else {
      vi = v[i] + gi;
    }
    v[i] = vi;
    // Every writer stores the same 1: the race is harmless.
    if (not_finite != nullptr && !isfinite(vi)) *not_finite = 1;
  }
}

__global__ void RateLimitKernel(const int32_t* indices, int64_t count, const float* w, float rms,
                                float scale, const float* local, float* diff, float* v,
                                unsigned long long* capped) {
  CUDA_GRID_STRIDE_LOOP(j, count) {
    const int32_t i = indices[j];
    const float cap = scale * (fabsf(w[i]) + rms);
    const float applied = diff[i];
    if (fabsf(applied) > cap) {
      const float keep = 1.f - cap / fabsf(applied);
      diff[i] = copysignf(cap, applied);
      v[i] = local[j] * keep;
      atomicAdd(capped, 1ull);
    }
  }
}

__global__ void FlagAsFloatKernel(const int32_t* flags, int64_t count, float* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    float any = 0.f;
    for (int64_t b = 0; b < count; ++b) any = flags[b] != 0 ? 1.f : any;
    *out = any;
  }
}

struct SumAndSquares {
  double sum;
  double squares;
};

struct ToSumAndSquares {
  __host__ __device__ SumAndSquares operator()(float x) const {
    const double d = x;
    return {d, d * d};
  }
};

struct AddSumAndSquares {
  __host__ __device__ SumAndSquares operator()(const SumAndSquares& a, const SumAndSquares& b) const {
    return {a.sum + b.sum, a.squares + b.squares};
  }
};

struct AtLeastThreshold {
  const float* importance;
  float threshold;
  // A zero importance (nothing waiting) never travels, even at threshold 0; NaN
  // fails both tests, as on the host.
  __host__ __device__ bool operator()(int32_t i) const {
    return importance[i] >= threshold && importance[i] > 0.f;
  }
};

__global__ void MagnitudeImportanceKernel(const float* applied, const float* w,
                                          const int32_t* indices, int64_t count, float epsilon,
                                          bool divide_by_weight, float* known) {
  CUDA_GRID_STRIDE_LOOP(j, count) {
    const int64_t i = indices != nullptr ? indices[j] : j;
    known[i] = divide_by_weight ? fabsf(applied[i]) / (fabsf(w[i]) + epsilon) : fabsf(applied[i]);
  }
}

__global__ void MarkSentKernel(const int32_t* indices, int64_t count, int32_t iter,
                               int32_t* last_sent) {
  CUDA_GRID_STRIDE_LOOP(j, count) { last_sent[indices[j]] = iter; }
}

__global__ void FillIntKernel(int32_t* x, int64_t n, int32_t value) {
  CUDA_GRID_STRIDE_LOOP(i, n) { x[i] = value; }
}

struct MinAndSum {
  int64_t min;
  int64_t sum;
};

struct ToMinAndSum {
  __host__ __device__ MinAndSum operator()(int32_t x) const { return {x, x}; }
};

struct CombineMinAndSum {
  __host__ __device__ MinAndSum operator()(const MinAndSum& a, const MinAndSum& b) const {
    return {a.min < b.min ? a.min : b.min, a.sum + b.sum};
  }
};

struct ToDouble {
  __host__ __device__ double operator()(float x) const { return x; }
};

// The stochastic draw's weight of coordinate i (ResidualKernels::StochasticDraw): in
// double for the sums, in float for the test (DrawKeeps, as on the host).
struct StochasticWeight {
  const int32_t* last_sent;
  const float* known;
  int64_t iter;
  double mean_known;
  bool by_age_only;
  __host__ __device__ double operator()(int64_t i) const {
    const double waited = static_cast<double>(iter - last_sent[i]);
    return by_age_only ? waited : waited * (known[i] + mean_known);
  }
};

struct StochasticKeep {
  const int32_t* last_sent;
  const float* known;  // null: by age alone
  int64_t iter;
  float mean_known;
  float scale;
  uint32_t seed;
  __host__ __device__ bool operator()(int32_t i) const {
    const float age = static_cast<float>(iter - last_sent[i]);
    const float weight = known ? age * (known[i] + mean_known) : age;
    return DrawKeeps(seed, static_cast<uint32_t>(i), weight, scale);
  }
};

// Sorts x descending into workspace->sorted_keys and returns its (k-1)-th element.
float SortedDescendingAt(const float* x, int64_t n, int64_t k, DeviceSelectionWorkspace* ws) {
  ws->sorted_keys.Reserve(n * sizeof(float));
  float* sorted = ws->sorted_keys.as<float>();
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceRadixSort::SortKeysDescending(storage, bytes, x, sorted, n);
  });
  return ReadBack(sorted + (k - 1));
}

}  // namespace

void DeviceImportance(const float* v, const float* w, int64_t n, float epsilon, float* importance) {
  if (n <= 0) return;
  ImportanceKernel<<<CudaGridBlocks(n), kCudaThreads>>>(v, w, n, epsilon, importance);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceAbs(const float* x, int64_t n, float* out) {
  if (n <= 0) return;
  AbsKernel<<<CudaGridBlocks(n), kCudaThreads>>>(x, n, out);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceSumAndSquares(const float* x, int64_t n, double* sum, double* sum_squares,
                         DeviceSelectionWorkspace* ws) {
  *sum = 0;
  *sum_squares = 0;
  if (n <= 0) return;
  ws->scalars.Reserve(sizeof(SumAndSquares));
  SumAndSquares* out = ws->scalars.as<SumAndSquares>();
  // A tree reduction in double: the order differs from the CPU's running sum, but in
  // double the difference stays far below float resolution of the VMR computed from
  // it; CUB's reduction has no atomics, so every run gives the same bits.
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceReduce::TransformReduce(storage, bytes, x, out, n, AddSumAndSquares(),
                                              ToSumAndSquares(), SumAndSquares{0.0, 0.0});
  });
  const SumAndSquares host = ReadBack(out);
  *sum = host.sum;
  *sum_squares = host.squares;
}

float DeviceKthLargest(const float* x, int64_t n, int64_t k, DeviceSelectionWorkspace* ws) {
  CHECK(k >= 1 && k <= n) << "k-th largest of " << n << " values with k = " << k;
  return SortedDescendingAt(x, n, k, ws);
}

float DeviceKthLargestAt(const float* x, const std::vector<int64_t>& positions, int64_t k,
                         DeviceSelectionWorkspace* ws) {
  const int64_t count = static_cast<int64_t>(positions.size());
  CHECK(k >= 1 && k <= count) << "k-th largest of " << count << " samples with k = " << k;
  ws->positions.Upload(positions.data(), count * sizeof(int64_t));
  // The sampled values go into order_in (free here), the sort then writes sorted_keys.
  ws->order_in.Reserve(count * sizeof(float));
  float* sample = ws->order_in.as<float>();
  GatherAtKernel<<<CudaGridBlocks(count), kCudaThreads>>>(x, ws->positions.as<int64_t>(), count, sample);
  CUDA_CHECK(cudaPeekAtLastError());
  return SortedDescendingAt(sample, count, k, ws);
}

int64_t DeviceSelectTopK(const float* importance, int64_t n, int64_t k, int32_t* indices,
                         float* kth_value, DeviceSelectionWorkspace* ws) {
  *kth_value = 0.f;
  if (k <= 0 || n <= 0) return 0;
  CHECK_LE(n, std::numeric_limits<int32_t>::max()) << "blob too large for int32 indices";
  k = std::min(k, n);
  ws->order_in.Reserve(n * sizeof(int32_t));
  ws->order_out.Reserve(n * sizeof(int32_t));
  ws->sorted_keys.Reserve(n * sizeof(float));
  int32_t* order_in = ws->order_in.as<int32_t>();
  int32_t* order_out = ws->order_out.as<int32_t>();
  float* sorted = ws->sorted_keys.as<float>();
  IotaKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, order_in);
  CUDA_CHECK(cudaPeekAtLastError());
  // (importance, index) pairs by importance, largest first. DeviceRadixSort is
  // stable (CUB documents it, descending order included, and it treats -0.0 and
  // +0.0 as equal, like std::greater): pairs with equal importance keep their input
  // order, which is ascending index. The first k pairs are therefore everything
  // above the k-th largest value plus the lowest-index ties at it, exactly the set
  // TopKIndices picks.
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairsDescending(storage, bytes, importance, sorted, order_in,
                                                     order_out, n);
  });
  *kth_value = ReadBack(sorted + (k - 1));
  // The chosen indices in ascending order, as the CPU returns them and the index
  // codecs expect.
  const int bits = IndexBits(n);
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceRadixSort::SortKeys(storage, bytes, order_out, indices, k, 0, bits);
  });
  return k;
}

int64_t DeviceSelectAtLeast(const float* importance, int64_t n, float threshold, int32_t* indices,
                            DeviceSelectionWorkspace* ws) {
  if (n <= 0) return 0;
  CHECK_LE(n, std::numeric_limits<int32_t>::max()) << "blob too large for int32 indices";
  ws->scalars.Reserve(sizeof(int64_t));
  int64_t* selected = ws->scalars.as<int64_t>();
  // Compaction of the indices 0..n-1 that pass the test; DeviceSelect keeps the input
  // order, so the result is ascending like the CPU's loop.
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceSelect::If(storage, bytes, thrust::counting_iterator<int32_t>(0), indices,
                                 selected, n, AtLeastThreshold{importance, threshold});
  });
  return ReadBack(selected);
}

void DeviceGather(const float* source, const int32_t* indices, int64_t count, float* values) {
  if (count <= 0) return;
  GatherKernel<<<CudaGridBlocks(count), kCudaThreads>>>(source, indices, count, values);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceScatter(const float* values, const int32_t* indices, int64_t count, float scale,
                   float* target) {
  if (count <= 0) return;
  ScatterKernel<<<CudaGridBlocks(count), kCudaThreads>>>(values, indices, count, scale, target);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceScatterAdd(const float* values, const int32_t* indices, int64_t count, float scale,
                      float* target) {
  if (count <= 0) return;
  ScatterAddKernel<<<CudaGridBlocks(count), kCudaThreads>>>(values, indices, count, scale, target);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceClearAt(const int32_t* indices, int64_t count, float* v, float* u) {
  if (count <= 0) return;
  ClearAtKernel<<<CudaGridBlocks(count), kCudaThreads>>>(indices, count, v, u);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceRecordImportance(const float* applied, const float* w, const int32_t* indices,
                            int64_t count, float epsilon, bool divide_by_weight, float* known) {
  if (count <= 0) return;
  MagnitudeImportanceKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      applied, w, indices, count, epsilon, divide_by_weight, known);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceMarkSent(const int32_t* indices, int64_t count, int32_t iter, int32_t* last_sent) {
  if (count <= 0) return;
  MarkSentKernel<<<CudaGridBlocks(count), kCudaThreads>>>(indices, count, iter, last_sent);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceFillInt(int32_t* x, int64_t n, int32_t value) {
  if (n <= 0) return;
  FillIntKernel<<<CudaGridBlocks(n), kCudaThreads>>>(x, n, value);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceMinAndSum(const int32_t* x, int64_t n, int64_t* min, int64_t* sum,
                     DeviceSelectionWorkspace* ws) {
  *min = 0;
  *sum = 0;
  if (n <= 0) return;
  ws->scalars.Reserve(sizeof(MinAndSum));
  MinAndSum* out = ws->scalars.as<MinAndSum>();
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceReduce::TransformReduce(storage, bytes, x, out, n, CombineMinAndSum(),
                                              ToMinAndSum(),
                                              MinAndSum{std::numeric_limits<int64_t>::max(), 0});
  });
  const MinAndSum host = ReadBack(out);
  *min = host.min;
  *sum = host.sum;
}

int64_t DeviceStochasticDraw(const int32_t* last_sent, const float* known, int64_t n, int64_t iter,
                             double expected, uint64_t stream, int32_t* indices,
                             DeviceSelectionWorkspace* ws) {
  if (n <= 0 || expected <= 0) return 0;
  CHECK_LE(n, std::numeric_limits<int32_t>::max()) << "blob too large for int32 indices";
  ws->scalars.Reserve(sizeof(double) + sizeof(int64_t));
  double* reduced = ws->scalars.as<double>();
  // The host's formula with tree sums in double (the host's are blocked sums, in another
  // order): the float scale and mean they give agree with the host's but for a last-bit
  // rounding now and then, which moves a coordinate's test by one float ulp.
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceReduce::Sum(storage, bytes, thrust::make_transform_iterator(known, ToDouble()),
                                  reduced, n);
  });
  const double mean_known = ReadBack(reduced) / n;
  StochasticWeight weight{last_sent, known, iter, mean_known, false};
  auto weights = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), weight);
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceReduce::Sum(storage, bytes, weights, reduced, n);
  });
  double total = ReadBack(reduced);
  if (!(total > 0)) {
    weight.by_age_only = true;
    auto ages = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), weight);
    RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
      return cub::DeviceReduce::Sum(storage, bytes, ages, reduced, n);
    });
    total = ReadBack(reduced);
  }
  if (!(total > 0)) return 0;
  int64_t* selected = reinterpret_cast<int64_t*>(ws->scalars.as<char>() + sizeof(double));
  const StochasticKeep keep{last_sent, weight.by_age_only ? nullptr : known, iter,
                            static_cast<float>(mean_known), static_cast<float>(expected / total),
                            DrawSeed(stream)};
  RunCub(&ws->cub_temp, [&](void* storage, size_t& bytes) {
    return cub::DeviceSelect::If(storage, bytes, thrust::counting_iterator<int32_t>(0), indices,
                                 selected, n, keep);
  });
  return ReadBack(selected);
}

int64_t DeviceRateLimit(const int32_t* indices, int64_t count, const float* w, float rms,
                        float scale, const float* local, float* diff, float* v,
                        DeviceSelectionWorkspace* ws) {
  if (count <= 0) return 0;
  ws->scalars.Reserve(sizeof(unsigned long long));
  auto* capped = ws->scalars.as<unsigned long long>();
  CUDA_CHECK(cudaMemset(capped, 0, sizeof(unsigned long long)));
  RateLimitKernel<<<CudaGridBlocks(count), kCudaThreads>>>(indices, count, w, rms, scale, local,
                                                            diff, v, capped);
  CUDA_CHECK(cudaPeekAtLastError());
  return static_cast<int64_t>(ReadBack(capped));
}

void DeviceAnyFlagAsFloat(const int32_t* flags, int64_t count, float* out) {
  FlagAsFloatKernel<<<1, 1>>>(flags, count, out);
  CUDA_CHECK(cudaPeekAtLastError());
}

void DeviceClipAndAccumulate(float* g, int64_t n, float clip, float momentum, float* v, float* u,
                             int32_t* not_finite, DeviceSelectionWorkspace* ws) {
  if (n <= 0) return;
  float scale = 1.f;
  if (clip > 0) {
    double sum = 0, squares = 0;
    DeviceSumAndSquares(g, n, &sum, &squares, ws);
    // The CPU's rule: a float norm, scaled only when above clip. The squares are summed
    // in double here (math::dot on the host), so the norm, and at the boundary the
    // decision, can differ from the CPU's in the last bit.
    const float norm = std::sqrt(static_cast<float>(squares));
    if (norm > clip) scale = clip / norm;
  }
  ScaleAndAccumulateKernel<<<CudaGridBlocks(n), kCudaThreads>>>(g, n, scale, momentum, v, u,
                                                                  not_finite);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
