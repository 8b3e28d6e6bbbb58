// The leader's IWP selection for one step, on a real net's parameter blobs: the
// per-step cost that the GPU check reports as a fraction of the training step.
// One step, as IwpExchange::ChooseIndices does it with its defaults (layer-wise
// budget, EXACT threshold): importance |v| / (|w| + epsilon) of every blob of at least
// min_layer_size elements, each blob's sum and sum of squares (its variance-to-mean
// ratio), the budget density x (all elements) split by IwpExchange::SplitBudget, and
// each blob's exact top-k. Both kernel sets run on the same inputs, side by side:
// HostSelectionKernels (the CPU reference) and, in CUDA builds with a device,
// DeviceSparseSelector. The index sets are compared too (they must be equal).
//
//   gpu_iwp_selection_bench -model M [-stage synthetic] [-iterations 20]
//                           [-density 0.015625] [-host_iterations 3]
// Prints per kernel set "selection_ms_per_step X" lines, then the ratio.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/exchanges/iwp_exchange.hpp"
#include "caffe/net.hpp"
#include "caffe/sync/selection_kernels.hpp"
#include "caffe/util/device_alternate.hpp"
#ifdef USE_CUDA
#include "caffe/sync/device_sparse_selector.hpp"
#include "caffe/util/device_buffer.hpp"
#endif

DEFINE_string(model, "", "Net prototxt (TRAIN phase) whose learnable blobs are used.");
DEFINE_string(stage, "synthetic", "Net stage(s), comma separated.");
DEFINE_int32(iterations, 20, "Timed steps for the device kernels.");
DEFINE_int32(host_iterations, 3, "Timed steps for the host kernels (they are slow).");
DEFINE_double(density, 1.0 / 64, "Fraction of all elements selected per step.");
DEFINE_int32(min_layer_size, 1024, "Blobs smaller than this are sent whole (not selected).");
DEFINE_double(vmr_exponent, 0.5, "IwpParameter.vmr_exponent.");
DEFINE_double(epsilon, 1e-8, "IwpParameter.epsilon.");

namespace caffe {
namespace {

using Clock = std::chrono::steady_clock;

struct Inputs {
  vector<Blob*> params;
  vector<size_t> sparse;             // blobs that are selected from
  vector<vector<float>> residuals;  // per learnable blob (empty for the dense ones)
  int64_t total = 0;                 // all elements, dense blobs included
};

// One step of the leader's selection; returns the selected indices per sparse blob.
vector<vector<int32_t>> SelectOnce(SelectionKernels* kernels, const Inputs& in,
                                   const vector<const float*>& residuals) {
  kernels->ComputeImportance(in.params, in.sparse, residuals, FLAGS_epsilon);
  vector<int64_t> sizes;
  vector<double> vmr;
  for (size_t j = 0; j < in.sparse.size(); ++j) {
    double sum = 0, sum_squares = 0;
    kernels->Sums(j, &sum, &sum_squares);
    sizes.push_back(kernels->Span(j).count);
    vmr.push_back(VarianceToMean(sum, sum_squares, sizes.back()));
  }
  const auto budget = static_cast<int64_t>(FLAGS_density * in.total);
  const vector<int64_t> k = IwpExchange::SplitBudget(sizes, vmr, budget, FLAGS_vmr_exponent);
  vector<vector<int32_t>> chosen;
  for (size_t j = 0; j < in.sparse.size(); ++j) {
    float threshold = 0;
    chosen.push_back(kernels->SelectTopK(j, k[j], &threshold));
  }
  return chosen;
}

double TimeSteps(SelectionKernels* kernels, const Inputs& in,
                 const vector<const float*>& residuals, int steps,
                 vector<vector<int32_t>>* chosen) {
  *chosen = SelectOnce(kernels, in, residuals);  // warm-up: scratch allocation
  SynchronizeDevice();
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) *chosen = SelectOnce(kernels, in, residuals);
  SynchronizeDevice();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / steps;
}

int Run() {
  CAFFE_REQUIRE(!FLAGS_model.empty()) << "gpu_iwp_selection_bench needs -model=FILE";
  auto context = std::make_shared<Context>();
  const bool gpu = HasCudaDevice();
  if (gpu) context->set_mode(Mode::GPU);
  vector<string> stages;
  std::stringstream stage_list(FLAGS_stage);
  for (string s; std::getline(stage_list, s, ',');) stages.push_back(s);
  Net net(FLAGS_model, TRAIN, context, 0, stages);

  Inputs in;
  in.params = net.learnable_params();
  std::mt19937_64 rng(1701);
  std::normal_distribution<float> noise(0.f, 1e-3f);
  for (size_t b = 0; b < in.params.size(); ++b) {
    const int64_t n = in.params[b]->count();
    in.total += n;
    in.residuals.emplace_back();
    if (n < FLAGS_min_layer_size) continue;
    in.sparse.push_back(b);
    in.residuals.back().resize(n);
    for (float& x : in.residuals.back()) x = noise(rng);
  }
  std::printf("net %s: %zu learnable blobs, %lld elements, %zu selected from, density %g\n",
              FLAGS_model.c_str(), in.params.size(), static_cast<long long>(in.total),
              in.sparse.size(), FLAGS_density);

  HostSelectionKernels host;
  // The kernels take residual pointers indexed like the learnable blobs.
  vector<const float*> host_residuals;
  for (const auto& r : in.residuals) host_residuals.push_back(r.empty() ? nullptr : r.data());
  vector<vector<int32_t>> host_chosen;
  const double host_ms = TimeSteps(&host, in, host_residuals, FLAGS_host_iterations, &host_chosen);
  std::printf("host   selection_ms_per_step %.3f\n", host_ms);

#ifdef USE_CUDA
  if (gpu) {
    vector<DeviceBuffer> buffers;
    vector<const float*> device_residuals;
    for (const auto& r : in.residuals) {
      buffers.emplace_back();
      if (!r.empty()) buffers.back().Upload(r.data(), r.size() * sizeof(float));
    }
    for (size_t b = 0; b < buffers.size(); ++b) {
      device_residuals.push_back(in.residuals[b].empty() ? nullptr : buffers[b].as<float>());
    }
    DeviceSparseSelector device;
    vector<vector<int32_t>> device_chosen;
    const double device_ms =
        TimeSteps(&device, in, device_residuals, FLAGS_iterations, &device_chosen);
    std::printf("device selection_ms_per_step %.3f\n", device_ms);
    std::printf("host / device %.1f; index sets %s\n", host_ms / device_ms,
                device_chosen == host_chosen ? "equal" : "DIFFER");
    return device_chosen == host_chosen ? 0 : 1;
  }
#endif
  std::printf("no CUDA device (or a CPU-only build): host kernels only\n");
  return 0;
}

}  // namespace
}  // namespace caffe

int main(int argc, char** argv) {
  gflags::SetUsageMessage("gpu_iwp_selection_bench -model M [-stage S] [-iterations N]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = 2;
  try {
    return caffe::Run();
  } catch (const caffe::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
