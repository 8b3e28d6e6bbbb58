// The solvers' update on the device: each update rule against its host loop, whole
// training runs of every solver type on the GPU against the same runs on the CPU, and
// the transfer counters of a steady-state step (nothing but scalars may cross PCIe).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "caffe/solver.hpp"
#include "caffe/solvers/update_rules.hpp"
#include "gpu_test_support.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Three arrays of n elements: a gradient in [-1, 1] and two non-negative histories.
struct RuleInputs {
  explicit RuleInputs(int64_t n) : a({n}), b({n}), c({n}) {
    FillUniform(&a, -1, 1, 3);
    FillUniform(&b, 0, 1, 4);
    FillUniform(&c, 0, 1, 5);
  }
  Blob a, b, c;
};

template <typename Rule>
void ExpectRuleMatchesHost(const Rule& rule, const char* name) {
  SCOPED_TRACE(name);
  const int64_t n = 100003;  // not a multiple of the block size
  RuleInputs host(n), device(n);
  ApplyRule(Mode::CPU, n, rule, host.a.mutable_cpu_data(), host.b.mutable_cpu_data(),
            host.c.mutable_cpu_data());
  ApplyRule(Mode::GPU, n, rule, device.a.mutable_gpu_data(), device.b.mutable_gpu_data(),
            device.c.mutable_gpu_data());
  for (auto [h, d] : {std::pair<Blob*, Blob*>{&host.a, &device.a}, {&host.b, &device.b},
                      {&host.c, &device.c}}) {
    const float* expected = h->cpu_data();
    const float* actual = d->cpu_data();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(actual[i], expected[i], 1e-5f * std::max(1.f, std::fabs(expected[i])))
          << "element " << i;
    }
  }
}

TEST(GpuSolverTest, EveryUpdateRuleMatchesItsHostLoop) {
  SKIP_WITHOUT_GPU();
  ExpectRuleMatchesHost(AdaGradRule{0.1f, 1e-8f}, "AdaGrad");
  ExpectRuleMatchesHost(RMSPropRule{0.1f, 0.9f, 1e-8f}, "RMSProp");
  ExpectRuleMatchesHost(AdaDeltaRule{1.f, 0.95f, 1e-6f}, "AdaDelta");
  ExpectRuleMatchesHost(AdamRule{0.01f, 0.9f, 0.999f, 1e-8f}, "Adam");
  ExpectRuleMatchesHost(NesterovStepRule{0.9f}, "Nesterov step");
}

// A small convolutional net on DummyData. Its fillers (xavier, msra) are drawn on the
// host in both modes (uniform and Gaussian tops are drawn on the device in GPU mode,
// from another stream), so both solvers see the same batches.
const char* kNet = R"(
  name: 'small'
  layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
          dummy_data_param { shape { dim: 8 dim: 3 dim: 12 dim: 12 } shape { dim: 8 dim: 10 }
                             data_filler { type: 'xavier' }
                             data_filler { type: 'msra' } } }
  layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c' param { lr_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
          convolution_param { num_output: 16 kernel_size: 3 pad: 1 engine: CAFFE
                              weight_filler { type: 'xavier' } bias_filler { type: 'constant' value: 0.1 } } }
  layer { name: 'relu' type: 'ReLU' bottom: 'c' top: 'c' relu_param { engine: CAFFE } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'c' top: 'p'
          inner_product_param { num_output: 10 weight_filler { type: 'xavier' } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' }
)";

SolverParameter SolverFor(const string& type, const string& extra, const string& net = kNet) {
  SolverParameter param = ParseSolver("base_lr: 0.01 lr_policy: 'fixed' max_iter: 100 "
                                      "random_seed: 5 display: 0 snapshot_after_train: false "
                                      "weight_decay: 0.001");
  param.MergeFrom(ParseSolver(extra));  // a case's own base_lr replaces the default
  param.set_type(type);
  *param.mutable_net_param() = ParseNet(net);
  return param;
}

vector<vector<float>> Weights(Solver* solver) {
  vector<vector<float>> out;
  for (Blob* b : solver->net()->learnable_params()) {
    const float* p = b->cpu_data();
    out.emplace_back(p, p + b->count());
  }
  return out;
}

TEST(GpuSolverTest, EverySolverTrainsOnTheDeviceAsOnTheHost) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<string, string>> cases = {
      {"SGD", "momentum: 0.9 clip_gradients: 0.5 iter_size: 2"},
      {"SGD", "momentum: 0.9 regularization_type: 'L1'"},
      {"Nesterov", "momentum: 0.9"},
      {"AdaGrad", "delta: 1e-6"},
      {"RMSProp", "rms_decay: 0.9 delta: 1e-6"},
      {"AdaDelta", "base_lr: 1 momentum: 0.95 delta: 1e-6"},
      {"Adam", "momentum: 0.9 momentum2: 0.999 delta: 1e-8"}};
  for (const auto& [type, extra] : cases) {
    SCOPED_TRACE(type + " " + extra);
    auto cpu = SolverRegistry::CreateSolver(SolverFor(type, extra), std::make_shared<Context>());
    auto gpu = SolverRegistry::CreateSolver(SolverFor(type, extra), MakeGpuContext());
    cpu->Step(5);
    gpu->Step(5);
    const auto expected = Weights(cpu.get());
    const auto actual = Weights(gpu.get());
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      for (size_t i = 0; i < expected[k].size(); ++i) {
        ASSERT_NEAR(actual[k][i], expected[k][i], 1e-4f * std::max(1.f, std::fabs(expected[k][i])))
            << "param " << k << " element " << i;
      }
    }
  }
}

TEST(GpuSolverTest, SteadyStateStepMovesNoParameterBytes) {
  SKIP_WITHOUT_GPU();
  // Constant data, drawn once: the batch itself then stays on the device too.
  string constant_net = kNet;
  for (const char* filler : {"type: 'xavier'", "type: 'msra'"}) {
    constant_net.replace(constant_net.find(filler), std::string(filler).size(),
                         "type: 'constant' value: 0.5");
  }
  for (const string type : {"SGD", "Adam"}) {
    SCOPED_TRACE(type);
    auto solver = SolverRegistry::CreateSolver(
        SolverFor(type, "momentum: 0.9 clip_gradients: 10", constant_net), MakeGpuContext());
    solver->Step(3);  // first uploads of weights, histories and the batch
    int64_t param_bytes = 0;
    for (Blob* b : solver->net()->learnable_params()) param_bytes += b->count() * 4;
    const HostDeviceTransfers before = SyncedMemoryTransfers();
    const int steps = 5;
    solver->Step(steps);
    const HostDeviceTransfers after = SyncedMemoryTransfers();
    const uint64_t up = after.to_device - before.to_device;
    const uint64_t down = after.to_host - before.to_host;
    // The smallest parameter blob (the 16 conv biases, 64 bytes) crossing once a step
    // would exceed these; the loss scalar read each step does not.
    EXPECT_EQ(up, 0u) << "of " << param_bytes << " parameter bytes";
    EXPECT_LE(down, 16u * steps) << "of " << param_bytes << " parameter bytes";
  }
}

}  // namespace
}  // namespace caffe
