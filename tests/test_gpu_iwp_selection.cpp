// The device selection kernels of the sparse exchanges (device_selection.hpp) and the
// GPU selector IwpExchange uses in GPU mode, against the CPU code as the reference:
// the same index sets (exact top-k with its tie rule, threshold selection), the same
// thresholds and sums, a gather/scatter/clear round trip, clip-and-accumulate, the
// residual primitives through their interface, and whole steps of every sparse method
// in GPU mode (device residuals) against CPU mode.
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "caffe/exchanges/iwp_exchange.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/host_residual_kernels.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "caffe/sync/residual_kernels.hpp"
#include "caffe/sync/selection_kernels.hpp"
#include "caffe/sync/top_k.hpp"
#include "caffe/util/io.hpp"
#include "gpu_test_support.hpp"
#include "test_util.hpp"

#ifdef USE_CUDA
#include "caffe/sync/device_selection.hpp"
#include "caffe/sync/device_sparse_selector.hpp"
#include "caffe/util/device_buffer.hpp"
#endif

namespace caffe {
namespace {

#ifdef USE_CUDA
// Importance-like inputs (non-negative) of several kinds, so that ties are common in
// some and absent in others.
enum class Ties { kNone, kMany, kAllEqual, kMostlyZero };

vector<float> MakeImportance(int64_t n, Ties ties, uint64_t seed) {
  std::mt19937_64 rng(seed);
  vector<float> x(n);
  std::uniform_real_distribution<float> uniform(0.f, 4.f);
  std::uniform_int_distribution<int> level(0, 9);
  std::uniform_int_distribution<int> rare(0, 20);
  for (float& v : x) {
    switch (ties) {
      case Ties::kNone: v = uniform(rng); break;
      case Ties::kMany: v = 0.25f * level(rng); break;
      case Ties::kAllEqual: v = 1.5f; break;
      case Ties::kMostlyZero: v = rare(rng) == 0 ? uniform(rng) : 0.f; break;
    }
  }
  return x;
}

const char* TiesName(Ties ties) {
  switch (ties) {
    case Ties::kNone: return "no ties";
    case Ties::kMany: return "ten levels";
    case Ties::kAllEqual: return "all equal";
    case Ties::kMostlyZero: return "mostly zero";
  }
  return "?";
}

// Sizes around the block size (256 threads) and CUB's tile sizes, and beyond.
const int64_t kSizes[] = {1, 7, 255, 256, 257, 1000, 4099, 100003};
const Ties kAllTies[] = {Ties::kNone, Ties::kMany, Ties::kAllEqual, Ties::kMostlyZero};

float CpuKthLargest(vector<float> x, int64_t k) {
  std::nth_element(x.begin(), x.begin() + (k - 1), x.end(), std::greater<float>());
  return x[k - 1];
}

#endif  // USE_CUDA

SyncParameter MakeSync(SyncParameter::Method method, const std::string& extra) {
  SyncParameter p;
  ParseProtoFromText(extra, "<sync>", &p);
  p.set_method(method);
  if (!p.has_density()) p.set_density(0.05f);
  if (!p.has_min_layer_size()) p.set_min_layer_size(1000);
  return p;
}

TEST(GpuIwpSelectionTest, TopKPicksExactlyTheCpuIndexSet) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  DeviceSelectionWorkspace workspace;
  DeviceBuffer importance, indices;
  uint64_t seed = 1;
  for (int64_t n : kSizes) {
    for (Ties ties : kAllTies) {
      const vector<float> x = MakeImportance(n, ties, seed++);
      importance.UploadVector(x);
      indices.Reserve(n * sizeof(int32_t));
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{2}, n / 64 + 1, n / 2, n - 1, n, n + 5}) {
        const vector<int32_t> cpu = TopKIndices(x.data(), n, k);
        float kth = -1.f;
        const int64_t count =
            DeviceSelectTopK(importance.as<float>(), n, k, indices.as<int32_t>(), &kth, &workspace);
        ASSERT_EQ(count, static_cast<int64_t>(cpu.size()))
            << "n " << n << " k " << k << " (" << TiesName(ties) << ")";
        EXPECT_EQ(indices.DownloadVector<int32_t>(count), cpu)
            << "n " << n << " k " << k << " (" << TiesName(ties) << ")";
        float cpu_min = 0.f;
        if (!cpu.empty()) {
          cpu_min = x[cpu[0]];
          for (int32_t i : cpu) cpu_min = std::min(cpu_min, x[i]);
        }
        EXPECT_EQ(kth, cpu_min) << "n " << n << " k " << k << " (" << TiesName(ties) << ")";
      }
    }
  }
#endif
}

TEST(GpuIwpSelectionTest, ThresholdSelectionMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  DeviceSelectionWorkspace workspace;
  DeviceBuffer importance, indices;
  uint64_t seed = 100;
  for (int64_t n : kSizes) {
    for (Ties ties : kAllTies) {
      const vector<float> x = MakeImportance(n, ties, seed++);
      importance.UploadVector(x);
      indices.Reserve(n * sizeof(int32_t));
      // A value that occurs (ties at the threshold are in), one between values, and
      // thresholds below and above everything.
      const float present = x[n / 2];
      for (float threshold : {present, present + 1e-3f, 0.f, -1.f, 1e9f}) {
        // The host's rule: at or above the threshold, and never a zero (nothing waits
        // there), so threshold 0 does not select the zeros.
        vector<int32_t> cpu;
        for (int64_t i = 0; i < n; ++i) {
          if (x[i] >= threshold && x[i] > 0.f) cpu.push_back(static_cast<int32_t>(i));
        }
        const int64_t count = DeviceSelectAtLeast(importance.as<float>(), n, threshold,
                                                  indices.as<int32_t>(), &workspace);
        ASSERT_EQ(count, static_cast<int64_t>(cpu.size()))
            << "n " << n << " threshold " << threshold << " (" << TiesName(ties) << ")";
        EXPECT_EQ(indices.DownloadVector<int32_t>(count), cpu)
            << "n " << n << " threshold " << threshold << " (" << TiesName(ties) << ")";
      }
    }
  }
#endif
}

TEST(GpuIwpSelectionTest, KthLargestExactAndSampledMatchTheCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  DeviceSelectionWorkspace workspace;
  DeviceBuffer values;
  uint64_t seed = 200;
  for (int64_t n : kSizes) {
    for (Ties ties : kAllTies) {
      const vector<float> x = MakeImportance(n, ties, seed++);
      values.UploadVector(x);
      for (int64_t k : {int64_t{1}, (n + 1) / 2, n}) {
        EXPECT_EQ(DeviceKthLargest(values.as<float>(), n, k, &workspace), CpuKthLargest(x, k))
            << "n " << n << " k " << k << " (" << TiesName(ties) << ")";
      }
      // The sampled threshold: positions drawn with replacement, as the exchange does.
      const int64_t samples = std::max<int64_t>(1, n / 10);
      const vector<int64_t> positions = SamplePositions(seed, n, samples);
      vector<float> sample;
      for (int64_t p : positions) sample.push_back(x[p]);
      for (int64_t k : {int64_t{1}, (samples + 2) / 3, samples}) {
        EXPECT_EQ(DeviceKthLargestAt(values.as<float>(), positions, k, &workspace),
                  CpuKthLargest(sample, k))
            << "n " << n << " samples " << samples << " k " << k << " (" << TiesName(ties) << ")";
      }
    }
  }
#endif
}

TEST(GpuIwpSelectionTest, ImportanceAndItsSumsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  DeviceSelectionWorkspace workspace;
  DeviceBuffer v_device, w_device, importance;
  const float epsilon = 1e-6f;
  for (int64_t n : kSizes) {
    std::mt19937_64 rng(300 + n);
    std::normal_distribution<float> normal(0.f, 1.f);
    vector<float> v(n), w(n);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = normal(rng) * (i % 13 == 0 ? 8.f : 1.f);
      w[i] = i % 7 == 0 ? 0.f : 0.1f * normal(rng);  // some zero weights: epsilon matters
    }
    v_device.UploadVector(v);
    w_device.UploadVector(w);
    importance.Reserve(n * sizeof(float));
    DeviceImportance(v_device.as<float>(), w_device.as<float>(), n, epsilon, importance.as<float>());
    const vector<float> device = importance.DownloadVector<float>(n);
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float cpu = std::fabs(v[i]) / (std::fabs(w[i]) + epsilon);
      ASSERT_FLOAT_EQ(device[i], cpu) << "n " << n << " element " << i;
      sum += cpu;
      squares += double(cpu) * cpu;
    }
    double device_sum = -1, device_squares = -1;
    DeviceSumAndSquares(importance.as<float>(), n, &device_sum, &device_squares, &workspace);
    EXPECT_NEAR(device_sum, sum, 1e-5 * std::fabs(sum)) << "n " << n;
    EXPECT_NEAR(device_squares, squares, 1e-5 * std::fabs(squares)) << "n " << n;
    const float vmr = VarianceToMean(sum, squares, n);
    EXPECT_NEAR(VarianceToMean(device_sum, device_squares, n), vmr, 1e-5 * std::fabs(vmr) + 1e-12)
        << "n " << n;
    // |x| for TOPK_ALLGATHER's magnitudes.
    DeviceAbs(v_device.as<float>(), n, importance.as<float>());
    const vector<float> magnitude = importance.DownloadVector<float>(n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(magnitude[i], std::fabs(v[i])) << "element " << i;
  }
#endif
}

TEST(GpuIwpSelectionTest, GatherScatterClearRoundTrip) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  for (int64_t n : {int64_t{1}, int64_t{257}, int64_t{100003}}) {
    std::mt19937_64 rng(400 + n);
    std::normal_distribution<float> normal(0.f, 1.f);
    vector<float> v(n), u(n);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = normal(rng);
      u[i] = normal(rng);
    }
    // Every third index, plus the last: distinct and ascending, like a selection.
    vector<int32_t> chosen;
    for (int64_t i = 0; i < n; i += 3) chosen.push_back(static_cast<int32_t>(i));
    if (chosen.back() != n - 1) chosen.push_back(static_cast<int32_t>(n - 1));
    const int64_t k = static_cast<int64_t>(chosen.size());
    DeviceBuffer v_device, u_device, indices, values, diff;
    v_device.UploadVector(v);
    u_device.UploadVector(u);
    indices.UploadVector(chosen);
    values.Reserve(k * sizeof(float));

    DeviceGather(v_device.as<float>(), indices.as<int32_t>(), k, values.as<float>());
    const vector<float> gathered = values.DownloadVector<float>(k);
    for (int64_t j = 0; j < k; ++j) ASSERT_EQ(gathered[j], v[chosen[j]]) << "j " << j;

    // Scatter into a zeroed diff: the values at the indices, zero elsewhere.
    const float scale = 0.25f;
    diff.UploadVector(vector<float>(n, 0.f));
    DeviceScatter(values.as<float>(), indices.as<int32_t>(), k, scale, diff.as<float>());
    vector<float> expected(n, 0.f);
    for (int64_t j = 0; j < k; ++j) expected[chosen[j]] = v[chosen[j]] * scale;
    EXPECT_EQ(diff.DownloadVector<float>(n), expected);

    // Two ranks' blocks added in turn, as TOPK_ALLGATHER sums its gathered selections.
    DeviceScatterAdd(values.as<float>(), indices.as<int32_t>(), k, scale, diff.as<float>());
    for (int64_t j = 0; j < k; ++j) expected[chosen[j]] += v[chosen[j]] * scale;
    const vector<float> added = diff.DownloadVector<float>(n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(added[i], expected[i], 1e-6f * std::max(1.f, std::fabs(expected[i]))) << i;
    }

    // Clearing: v and u are zero exactly at the indices and untouched elsewhere;
    // without u only v changes.
    DeviceClearAt(indices.as<int32_t>(), k, v_device.as<float>(), u_device.as<float>());
    vector<float> v_cleared = v, u_cleared = u;
    for (int32_t i : chosen) v_cleared[i] = u_cleared[i] = 0.f;
    EXPECT_EQ(v_device.DownloadVector<float>(n), v_cleared);
    EXPECT_EQ(u_device.DownloadVector<float>(n), u_cleared);
    u_device.UploadVector(u);
    v_device.UploadVector(v);
    DeviceClearAt(indices.as<int32_t>(), k, v_device.as<float>(), nullptr);
    EXPECT_EQ(v_device.DownloadVector<float>(n), v_cleared);
    EXPECT_EQ(u_device.DownloadVector<float>(n), u);
  }
#endif
}

TEST(GpuIwpSelectionTest, ClipAndAccumulateMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  DeviceSelectionWorkspace workspace;
  const int64_t n = 4099;
  std::mt19937_64 rng(500);
  std::normal_distribution<float> normal(0.f, 1.f);
  vector<float> g0(n), v0(n), u0(n);
  for (int64_t i = 0; i < n; ++i) {
    g0[i] = normal(rng);
    v0[i] = normal(rng);
    u0[i] = normal(rng);
  }
  double norm_squared = 0;
  for (float x : g0) norm_squared += double(x) * x;
  const float norm = std::sqrt(static_cast<float>(norm_squared));  // about 64
  // No clipping, a clip far above the norm, and one that scales by about a half.
  for (float clip : {0.f, 10 * norm, 0.5f * norm}) {
    for (bool momentum_correction : {false, true}) {
      const float momentum = 0.9f;
      // The CPU reference, as HostResidualKernels::ClipAndAccumulate computes it.
      vector<float> g = g0, v = v0, u = u0;
      if (clip > 0 && norm > clip) {
        for (float& x : g) x *= clip / norm;
      }
      for (int64_t i = 0; i < n; ++i) {
        if (momentum_correction) {
          u[i] = momentum * u[i] + g[i];
          v[i] += u[i];
        } else {
          v[i] += g[i];
        }
      }
      DeviceBuffer g_device, v_device, u_device;
      g_device.UploadVector(g0);
      v_device.UploadVector(v0);
      u_device.UploadVector(u0);
      DeviceClipAndAccumulate(g_device.as<float>(), n, clip, momentum, v_device.as<float>(),
                              momentum_correction ? u_device.as<float>() : nullptr, nullptr,
                              &workspace);
      const vector<float> g_out = g_device.DownloadVector<float>(n);
      const vector<float> v_out = v_device.DownloadVector<float>(n);
      const vector<float> u_out = u_device.DownloadVector<float>(n);
      for (int64_t i = 0; i < n; ++i) {
        const std::string where = "clip " + std::to_string(clip) + " momentum correction " +
                                  std::to_string(momentum_correction) + " element " +
                                  std::to_string(i);
        ASSERT_NEAR(g_out[i], g[i], 1e-6f * std::max(1.f, std::fabs(g[i]))) << where;
        ASSERT_NEAR(v_out[i], v[i], 1e-6f * std::max(1.f, std::fabs(v[i]))) << where;
        if (momentum_correction) {
          ASSERT_NEAR(u_out[i], u[i], 1e-6f * std::max(1.f, std::fabs(u[i]))) << where;
        } else {
          ASSERT_EQ(u_out[i], u0[i]) << where;
        }
      }
    }
  }
#endif
}

// The selector IwpExchange uses in GPU mode gives what the host kernels give, through
// the interface the exchange's algorithm calls.
TEST(GpuIwpSelectionTest, DeviceSelectorMatchesTheHostKernels) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> params;
  vector<vector<float>> residuals;
  uint64_t seed = 600;
  for (int64_t n : {5000, 40, 3000, 257}) {
    blobs.push_back(std::make_unique<Blob>(vector<int64_t>{n}));
    FillUniform(blobs.back().get(), -1, 1, seed);
    params.push_back(blobs.back().get());
    residuals.push_back(MakeImportance(n, seed % 2 ? Ties::kMany : Ties::kNone, seed));
    ++seed;
  }
  // Blob 1 stays out of the list, as a dense blob would.
  const vector<size_t> listed = {0, 2, 3};
  // Each kernel set reads the residuals in its own memory.
  vector<DeviceBuffer> device_residuals(residuals.size());
  vector<const float*> host_v, device_v;
  for (size_t b = 0; b < residuals.size(); ++b) {
    device_residuals[b].UploadVector(residuals[b]);
    host_v.push_back(residuals[b].data());
    device_v.push_back(device_residuals[b].as<float>());
  }
  HostSelectionKernels host;
  std::unique_ptr<SelectionKernels> device = CreateDeviceSelectionKernels();
  ASSERT_TRUE(device != nullptr);
  host.ComputeImportance(params, listed, host_v, 1e-6f);
  device->ComputeImportance(params, listed, device_v, 1e-6f);
  ASSERT_EQ(device->blobs(), listed.size());
  const int64_t total = host.All().count;
  EXPECT_EQ(device->All().count, total);
  for (int64_t k : {int64_t{1}, total / 64, total}) {
    EXPECT_EQ(device->KthLargest(device->All(), k), host.KthLargest(host.All(), k)) << "k " << k;
  }
  const vector<int64_t> all_positions = SamplePositions(7, total, total / 10);
  EXPECT_EQ(device->KthLargestAt(device->All(), all_positions, 17),
            host.KthLargestAt(host.All(), all_positions, 17));
  for (size_t j = 0; j < listed.size(); ++j) {
    const int64_t n = host.Span(j).count;
    double host_sum, host_squares, device_sum, device_squares;
    host.Sums(j, &host_sum, &host_squares);
    device->Sums(j, &device_sum, &device_squares);
    EXPECT_NEAR(device_sum, host_sum, 1e-5 * std::fabs(host_sum)) << "blob " << j;
    EXPECT_NEAR(device_squares, host_squares, 1e-5 * std::fabs(host_squares)) << "blob " << j;
    const vector<int64_t> positions = SamplePositions(8 + j, n, n / 10 + 1);
    const float sampled = host.KthLargestAt(host.Span(j), positions, 3);
    EXPECT_EQ(device->KthLargestAt(device->Span(j), positions, 3), sampled) << "blob " << j;
    EXPECT_EQ(device->SelectAtLeast(j, sampled), host.SelectAtLeast(j, sampled)) << "blob " << j;
    for (int64_t k : {int64_t{1}, n / 64 + 1, n}) {
      float host_threshold = -1, device_threshold = -2;
      const vector<int32_t> expected = host.SelectTopK(j, k, &host_threshold);
      EXPECT_EQ(device->SelectTopK(j, k, &device_threshold), expected) << "blob " << j << " k " << k;
      EXPECT_EQ(device_threshold, host_threshold) << "blob " << j << " k " << k;
    }
  }
#endif
}

// Importance over |w| and |v| alone (MAGNITUDE), over several blobs at once: the same
// importances and choices as the host's.
TEST(GpuIwpSelectionTest, ImportanceAndMagnitudeScoresMatchTheHostKernels) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  // Three blobs whose weights differ in scale, c's rows among themselves too.
  Blob a(vector<int64_t>{4099}), b(vector<int64_t>{2053}), c(vector<int64_t>{8, 513});
  FillUniform(&a, -1, 1, 720);
  FillUniform(&b, -1, 1, 721);
  FillUniform(&c, -1, 1, 724);
  for (int64_t i = 0; i < c.count(); ++i) c.mutable_cpu_data()[i] *= static_cast<float>(1 + i / 513);
  vector<float> ra = MakeImportance(4099, Ties::kNone, 722), rb = MakeImportance(2053, Ties::kNone, 723),
                rc = MakeImportance(c.count(), Ties::kNone, 725);
  DeviceBuffer da, db, dc;
  da.UploadVector(ra);
  db.UploadVector(rb);
  dc.UploadVector(rc);
  vector<Blob*> params = {&a, &b, &c};
  for (const bool divide : {true, false}) {
    HostSelectionKernels host;
    std::unique_ptr<SelectionKernels> device = CreateDeviceSelectionKernels();
    ASSERT_TRUE(device != nullptr);
    host.ComputeImportance(params, {0, 1, 2}, {ra.data(), rb.data(), rc.data()}, 1e-6f, divide);
    device->ComputeImportance(params, {0, 1, 2}, {da.as<float>(), db.as<float>(), dc.as<float>()},
                              1e-6f, divide);
    for (size_t j = 0; j < 3; ++j) {
      double host_sum, host_squares, device_sum, device_squares;
      host.Sums(j, &host_sum, &host_squares);
      device->Sums(j, &device_sum, &device_squares);
      EXPECT_NEAR(device_sum, host_sum, 1e-5 * std::fabs(host_sum)) << "blob " << j;
      float host_threshold = -1, device_threshold = -2;
      EXPECT_EQ(device->SelectTopK(j, 64, &device_threshold), host.SelectTopK(j, 64, &host_threshold))
          << "blob " << j << " divide " << divide;
      EXPECT_NEAR(device_threshold, host_threshold, 1e-6f * host_threshold) << "blob " << j;
    }
  }
#endif
}

// The residual primitives the sparse exchanges are written with, host and device
// kernels side by side through the interface, from the same state: accumulation with
// momentum, the values' gather, scatter, clearing, the rate limit and the known
// importances, TOPK_ALLGATHER's selection, gather, scatter-add and clearing on index
// lists in kernel memory, the stochastic draw and the ages. Values are multiples of
// 1/8, weights +-0.5 and epsilon 0.5, so that every result is exact in float and the
// comparison can be bitwise whether or not either compiler fuses multiply-adds.
TEST(GpuIwpSelectionTest, DeviceResidualKernelsMatchTheHostKernels) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<ResidualKernels> device = CreateDeviceResidualKernels();
  ASSERT_TRUE(device != nullptr);
  HostResidualKernels host;
  ResidualKernels* kernels[2] = {&host, device.get()};
  const int32_t iter = 40;
  const vector<int64_t> sizes = {5000, 40, 257};
  std::mt19937_64 rng(800);
  std::uniform_int_distribution<int> eighths(-24, 24), ages(1, 30), sixteenths(0, 32);
  ResidualState state;
  for (int64_t n : sizes) {
    vector<float> v(n), u(n), known(n);
    vector<int32_t> last(n);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = eighths(rng) / 8.f;
      u[i] = eighths(rng) / 8.f;
      last[i] = iter - ages(rng);
      known[i] = sixteenths(rng) / 16.f;
    }
    state.residual.push_back(v);
    // Blob 1 without u, as if only the others had momentum correction.
    state.velocity.push_back(state.velocity.size() == 1 ? vector<float>() : u);
    state.last_sent.push_back(last);
    state.known_importance.push_back(known);
  }
  for (ResidualKernels* k : kernels) k->Load(state);
  // One parameter set per side: host diffs for the host kernels, device ones for the
  // device kernels.
  vector<std::unique_ptr<Blob>> blobs[2];
  vector<Blob*> params[2];
  for (size_t b = 0; b < sizes.size(); ++b) {
    for (int side = 0; side < 2; ++side) {
      blobs[side].push_back(std::make_unique<Blob>(vector<int64_t>{sizes[b]}));
      params[side].push_back(blobs[side].back().get());
    }
  }
  auto set_gradients = [&](int seed) {
    for (size_t b = 0; b < sizes.size(); ++b) {
      for (int side = 0; side < 2; ++side) {
        std::mt19937_64 same(100 * seed + b);  // both sides get the same numbers
        std::uniform_int_distribution<int> sign(0, 1), gradient(-24, 24);
        float* w = params[side][b]->mutable_cpu_data();
        float* g = params[side][b]->mutable_cpu_diff();
        for (int64_t i = 0; i < sizes[b]; ++i) {
          w[i] = sign(same) ? 0.5f : -0.5f;
          g[i] = gradient(same) / 8.f;
        }
        if (side == 1) {
          params[side][b]->gpu_data();
          params[side][b]->gpu_diff();
        }
      }
    }
  };
  auto diffs = [&](int side) {
    vector<vector<float>> out;
    for (Blob* p : params[side]) out.emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
    return out;
  };
  auto expect_same_state = [&](const char* after) {
    const ResidualState& a = host.Host();
    const ResidualState& b = device->Host();
    EXPECT_EQ(b.residual, a.residual) << after;
    EXPECT_EQ(b.velocity, a.velocity) << after;
    EXPECT_EQ(b.last_sent, a.last_sent) << after;
    EXPECT_EQ(b.known_importance, a.known_importance) << after;
    EXPECT_EQ(diffs(1), diffs(0)) << after;
  };

  // Accumulation, then one all-reduce's worth of primitives (one rank: the "sum" is
  // this rank's values).
  set_gradients(1);
  for (int side = 0; side < 2; ++side) {
    kernels[side]->ClipAndAccumulate(params[side], 0.f, 0.5f);
    EXPECT_EQ(kernels[side]->NonFiniteBlob(), -1);
  }
  expect_same_state("accumulation");
  vector<ResidualSelection> selections(sizes.size());
  for (int32_t i = 0; i < sizes[0]; i += 7) selections[0].indices.push_back(i);
  selections[1].all = true;
  for (int32_t i = 2; i < sizes[2]; i += 3) selections[2].indices.push_back(i);
  int64_t total = 0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    total += selections[b].all ? sizes[b] : static_cast<int64_t>(selections[b].indices.size());
  }
  vector<float> gathered[2];
  int64_t capped[2] = {0, 0};
  for (int side = 0; side < 2; ++side) {
    ResidualKernels& k = *kernels[side];
    float* values = k.GatherSelected(selections, true);
    gathered[side].resize(total + 1);
    k.CopyToHost(values, (total + 1) * sizeof(float), gathered[side].data());
    EXPECT_TRUE(k.AllFinite(values, total));
    int64_t pos = 0;
    for (size_t b = 0; b < sizes.size(); ++b) {
      Blob* p = params[side][b];
      k.ScatterSelected(b, selections[b], p, values + pos, 0.5f);
      k.ClearSelected(b, selections[b], iter);
      if (!selections[b].all) {
        capped[side] += k.LimitSelected(b, selections[b], p, 0.25f, k.LocalValues() + pos);
      }
      // Blob 2's known importance by magnitude, the others' over |w|.
      k.RecordKnownImportance(b, selections[b], *p, 0.5f, b != 2);
      pos += selections[b].all ? sizes[b] : static_cast<int64_t>(selections[b].indices.size());
    }
  }
  EXPECT_EQ(gathered[1], gathered[0]);
  EXPECT_EQ(gathered[0][total], 0.f) << "no residual went non-finite";
  EXPECT_GT(capped[0], 0) << "the rate limit should cut some values";
  EXPECT_EQ(capped[1], capped[0]);
  expect_same_state("scatter, clear, rate limit, known importance");

  // TOPK_ALLGATHER's primitives: this rank's top-k of blob 0 into a block in kernel
  // memory, its values, two blocks added in turn, then clearing.
  set_gradients(2);
  for (int side = 0; side < 2; ++side) kernels[side]->ClipAndAccumulate(params[side], 0.f, 0.5f);
  const int64_t k0 = 64;
  vector<int32_t> picked[2];
  for (int side = 0; side < 2; ++side) {
    ResidualKernels& k = *kernels[side];
    std::unique_ptr<KernelBuffer> block = k.NewBuffer();
    block->Reserve(8 * k0);
    float* values = block->as<float>();
    int32_t* indices = reinterpret_cast<int32_t*>(block->as<char>() + 4 * k0);
    ASSERT_EQ(k.SelectLargest(0, k0, indices), k0);
    picked[side].resize(k0);
    k.CopyToHost(indices, k0 * sizeof(int32_t), picked[side].data());
    k.Gather(0, indices, k0, values);
    for (int rank = 0; rank < 2; ++rank) k.ScatterAdd(values, indices, k0, 0.5f, params[side][0]);
    k.ClearAt(0, indices, k0, iter + 1);
  }
  EXPECT_EQ(picked[1], picked[0]);
  EXPECT_TRUE(std::is_sorted(picked[0].begin(), picked[0].end()));
  expect_same_state("top-k, gather, scatter-add, clear");

  // The stochastic draw and the ages read the same state.
  for (size_t b = 0; b < sizes.size(); ++b) {
    const uint64_t stream = 0x1234 + b;
    EXPECT_EQ(device->StochasticDraw(b, iter + 2, 0.1 * sizes[b], stream),
              host.StochasticDraw(b, iter + 2, 0.1 * sizes[b], stream))
        << "blob " << b;
    int64_t min[2];
    double sum[2];
    for (int side = 0; side < 2; ++side) {
      kernels[side]->LastSentMinAndSum(b, iter + 2, &min[side], &sum[side]);
    }
    EXPECT_EQ(min[1], min[0]) << "blob " << b;
    EXPECT_EQ(sum[1], sum[0]) << "blob " << b;
  }
}

// Whole exchange steps in GPU mode (residuals, selection, gather, scatter on the
// device) and in CPU mode, on one rank, for every selection mode, dense warm-up steps,
// momentum correction and a save / restore in the middle: the applied gradients and
// the residuals come out the same. The gradients are multiples of 1/8 and the
// momentum 0.5, so every sum and product is exact in float and the comparison can be
// bitwise whether or not either compiler fuses multiply-adds.
TEST(GpuIwpSelectionTest, StepsInGpuModeEqualCpuMode) {
  SKIP_WITHOUT_GPU();
  const std::pair<SyncParameter::Method, std::string> modes[] = {
      {SyncParameter::IWP, ""},
      {SyncParameter::IWP, "iwp_param { threshold_mode: SAMPLED sample_fraction: 0.2 }"},
      {SyncParameter::IWP, "iwp_param { layer_wise: false }"},
      {SyncParameter::IWP,
       "iwp_param { layer_wise: false threshold_mode: SAMPLED sample_fraction: 0.2 }"},
      {SyncParameter::IWP,
       "momentum_correction: true iwp_param { vmr_exponent: 1 stochastic_fraction: 0.1 }"},
      {SyncParameter::IWP, "warmup_iter: 2 iwp_param { leader: PER_LAYER }"},
      {SyncParameter::FIXED_THRESHOLD, "iwp_param { fixed_threshold: 2 }"},
      {SyncParameter::RANDOMK, "momentum_correction: true"},
      {SyncParameter::TOPK_ALLGATHER, ""},
      {SyncParameter::TOPK_ALLGATHER, "momentum_correction: true warmup_iter: 1"},
  };
  const int steps = 6, restore_at = 3;
  for (const auto& [method, extra] : modes) {
    const std::string what = std::to_string(method) + " {" + extra + "}";
    auto make = [&, method = method, extra = extra](bool gpu) {
      auto exchange = CreateGradientExchange(MakeSync(method, extra),
                                             std::make_shared<LocalCommunicator>());
      exchange->Describe({{}, {}, {}, {}, gpu});
      exchange->TakeOverMomentum(0.5f);
      return exchange;
    };
    auto cpu = make(false);
    auto gpu = make(true);
    vector<std::unique_ptr<Blob>> cpu_blobs, gpu_blobs;
    vector<Blob*> cpu_params, gpu_params;
    for (int64_t n : {5000, 3000, 40, 700}) {
      for (auto* set : {&cpu_blobs, &gpu_blobs}) {
        set->push_back(std::make_unique<Blob>(vector<int64_t>{n}));
        FillUniform(set->back().get(), -1, 1, 100 + n);
      }
      cpu_params.push_back(cpu_blobs.back().get());
      gpu_params.push_back(gpu_blobs.back().get());
    }
    for (int step = 0; step < steps; ++step) {
      if (step == restore_at) {
        // Resume: a fresh GPU-mode exchange continues from the saved state.
        const std::string state = gpu->SaveState();
        gpu = make(true);
        gpu->RestoreState(state);
      }
      std::mt19937_64 rng(step);
      std::uniform_int_distribution<int> eighths(-24, 24);
      for (size_t b = 0; b < cpu_params.size(); ++b) {
        float* g_cpu = cpu_params[b]->mutable_cpu_diff();
        float* g_gpu = gpu_params[b]->mutable_cpu_diff();
        for (int64_t i = 0; i < cpu_params[b]->count(); ++i) {
          g_cpu[i] = g_gpu[i] = eighths(rng) / 8.f * (i % 17 == 0 ? 4.f : 1.f);
        }
        // As in a GPU-mode solver: weights and gradients on the device.
        gpu_params[b]->gpu_data();
        gpu_params[b]->gpu_diff();
      }
      cpu->Exchange(step, cpu_params);
      gpu->Exchange(step, gpu_params);
      auto* cpu_residual = dynamic_cast<ResidualExchange*>(cpu.get());
      auto* gpu_residual = dynamic_cast<ResidualExchange*>(gpu.get());
      ASSERT_TRUE(cpu_residual != nullptr && gpu_residual != nullptr);
      for (size_t b = 0; b < cpu_params.size(); ++b) {
        const int64_t n = cpu_params[b]->count();
        const vector<float> expected(cpu_params[b]->cpu_diff(), cpu_params[b]->cpu_diff() + n);
        const vector<float> actual(gpu_params[b]->cpu_diff(), gpu_params[b]->cpu_diff() + n);
        EXPECT_EQ(actual, expected) << what << " step " << step << " blob " << b << " diff";
        EXPECT_EQ(gpu_residual->residual(b), cpu_residual->residual(b))
            << what << " step " << step << " blob " << b << " residual";
        EXPECT_EQ(gpu_residual->velocity(b), cpu_residual->velocity(b))
            << what << " step " << step << " blob " << b << " velocity";
      }
    }
  }
}

// A state saved with momentum correction, resumed without it (RestoreState accepts
// that): the host keeps the saved velocities, which GPU mode never uploads, so the
// host mirror must not try to download them (it used to fail a CHECK in SaveState).
// The run then goes on like the CPU-mode run of the same resume.
TEST(GpuIwpSelectionTest, ResumeWithoutMomentumCorrectionMatchesCpuMode) {
  SKIP_WITHOUT_GPU();
  auto make = [](bool gpu, bool momentum_correction) {
    auto exchange = CreateGradientExchange(
        MakeSync(SyncParameter::IWP, momentum_correction ? "momentum_correction: true" : ""),
        std::make_shared<LocalCommunicator>());
    exchange->Describe({{}, {}, {}, {}, gpu});
    exchange->TakeOverMomentum(0.5f);
    return exchange;
  };
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> params;
  for (int64_t n : {5000, 40}) {
    blobs.push_back(std::make_unique<Blob>(vector<int64_t>{n}));
    FillUniform(blobs.back().get(), -1, 1, 100 + n);
    params.push_back(blobs.back().get());
  }
  auto set_gradients = [&](int step) {
    std::mt19937_64 rng(step);
    std::uniform_int_distribution<int> eighths(-24, 24);
    for (Blob* p : params) {
      float* g = p->mutable_cpu_diff();
      for (int64_t i = 0; i < p->count(); ++i) g[i] = eighths(rng) / 8.f;
      p->gpu_data();
      p->gpu_diff();
    }
  };
  auto before = make(false, true);
  for (int step = 0; step < 2; ++step) {
    set_gradients(step);
    before->Exchange(step, params);
  }
  const std::string state = before->SaveState();
  std::string resumed_state[2];
  vector<vector<float>> diffs[2];
  for (bool gpu : {false, true}) {
    auto resumed = make(gpu, false);
    resumed->RestoreState(state);
    set_gradients(2);
    resumed->Exchange(2, params);
    for (Blob* p : params) diffs[gpu].emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
    resumed_state[gpu] = resumed->SaveState();
  }
  EXPECT_EQ(diffs[1], diffs[0]);
  EXPECT_EQ(resumed_state[1], resumed_state[0]);
}

}  // namespace
}  // namespace caffe
