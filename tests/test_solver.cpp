// Solvers: one update of each type against the textbook formula, every lr_policy
// against its formula, warm-up, iter_size, clipping, and exact snapshot/resume (binary
// and HDF5 weights).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "caffe/solver.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "caffe/syncedmem.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// A linear regression net whose inputs are fixed Input blobs, so the gradient at
// given weights is deterministic and can be read back by hand.
const char* kRegressionNet = R"(
  name: 'regression'
  layer { name: 'input' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'pred'
          param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
          inner_product_param { num_output: 2
            weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'uniform' min: -1 max: 1 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'pred' bottom: 'y' top: 'loss' }
)";

SolverParameter MakeSolverParam(const string& type, const string& extra = "") {
  SolverParameter param = ParseSolver("base_lr: 0.1 max_iter: 100 "
                                      "random_seed: 7 display: 0 snapshot_after_train: false " +
                                      extra);
  if (!param.has_lr_policy()) param.set_lr_policy("fixed");
  param.set_type(type);
  *param.mutable_net_param() = ParseNet(kRegressionNet);
  return param;
}

void FillInputs(Net* net) {
  FillUniform(net->blob_by_name("x").get(), -1, 1, 11);
  FillUniform(net->blob_by_name("y").get(), -1, 1, 12);
}

vector<vector<float>> Values(const vector<Blob*>& blobs, bool diff) {
  vector<vector<float>> out;
  for (Blob* b : blobs) {
    const float* p = diff ? b->cpu_diff() : b->cpu_data();
    out.emplace_back(p, p + b->count());
  }
  return out;
}

// The gradient (plus nothing else) at the net's current weights.
vector<vector<float>> Gradient(Net* net) {
  net->ClearParamDiffs();
  net->ForwardBackward();
  return Values(net->learnable_params(), true);
}

// Runs two steps of `type` and compares each with `rule`, which maps
// (param index, element, weight, gradient incl. decay, lr_mult-scaled rate, step t)
// to the new weight, keeping whatever history it needs in its captures.
using UpdateRule = std::function<float(size_t, size_t, float, float, float, int)>;

void CheckTwoSteps(const string& type, const string& extra, float weight_decay,
                   UpdateRule rule) {
  auto context = std::make_shared<Context>();
  auto solver = SolverRegistry::CreateSolver(MakeSolverParam(type, extra), context);
  Net* net = solver->net().get();
  FillInputs(net);
  for (int t = 0; t < 2; ++t) {
    auto w = Values(net->learnable_params(), false);
    auto g = Gradient(net);
    solver->Step(1);
    auto w_new = Values(net->learnable_params(), false);
    for (size_t p = 0; p < w.size(); ++p) {
      const float lr = 0.1f * net->params_lr()[p];
      const float decay = weight_decay * net->params_weight_decay()[p];
      for (size_t i = 0; i < w[p].size(); ++i) {
        const float grad = g[p][i] + decay * w[p][i];
        const float expected = rule(p, i, w[p][i], grad, lr, t);
        EXPECT_NEAR(w_new[p][i], expected, 1e-5f * std::max(1.f, std::fabs(expected)))
            << type << " step " << t << " param " << p << " element " << i;
      }
    }
  }
}

TEST(SolverTest, SGDWithMomentumAndDecay) {
  std::map<std::pair<size_t, size_t>, float> v;
  CheckTwoSteps("SGD", "momentum: 0.9 weight_decay: 0.01", 0.01f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  float& hist = v[{p, i}];
                  hist = 0.9f * hist + lr * g;
                  return w - hist;
                });
}

// In CPU mode nothing crosses to a device: every solver's step, clipping included,
// reads and writes host memory only (in a CUDA build a stray gpu_data() would count).
TEST(SolverTest, CpuStepsMoveNoHostDeviceBytes) {
  for (const char* type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    SCOPED_TRACE(type);
    const string type_name = type;
    const bool momentum = type_name != "AdaGrad" && type_name != "RMSProp";
    auto solver = SolverRegistry::CreateSolver(
        MakeSolverParam(type, string(momentum ? "momentum: 0.9 " : "") +
                                  "weight_decay: 0.01 clip_gradients: 0.5"),
        std::make_shared<Context>());
    FillInputs(solver->net().get());
    const HostDeviceTransfers before = SyncedMemoryTransfers();
    solver->Step(3);
    const HostDeviceTransfers after = SyncedMemoryTransfers();
    EXPECT_EQ(after.to_device, before.to_device);
    EXPECT_EQ(after.to_host, before.to_host);
  }
}

TEST(SolverTest, SGDWithL1Decay) {
  CheckTwoSteps("SGD", "weight_decay: 0.05 regularization_type: 'L1'", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  // g came without decay (weight_decay passed as 0); add the L1 term.
                  const float decay = p == 0 ? 0.05f : 0.f;
                  const float sign = static_cast<float>((w > 0) - (w < 0));
                  return w - lr * (g + decay * sign);
                });
}

TEST(SolverTest, Nesterov) {
  std::map<std::pair<size_t, size_t>, float> v;
  CheckTwoSteps("Nesterov", "momentum: 0.9", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  float& hist = v[{p, i}];
                  const float prev = hist;
                  hist = 0.9f * hist + lr * g;
                  return w - (1.9f * hist - 0.9f * prev);
                });
}

TEST(SolverTest, AdaGrad) {
  std::map<std::pair<size_t, size_t>, float> h;
  CheckTwoSteps("AdaGrad", "delta: 1e-6", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  float& acc = h[{p, i}];
                  acc += g * g;
                  return w - lr * g / (std::sqrt(acc) + 1e-6f);
                });
}

TEST(SolverTest, RMSProp) {
  std::map<std::pair<size_t, size_t>, float> h;
  CheckTwoSteps("RMSProp", "rms_decay: 0.95 delta: 1e-6", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  float& acc = h[{p, i}];
                  acc = 0.95f * acc + 0.05f * g * g;
                  return w - lr * g / (std::sqrt(acc) + 1e-6f);
                });
}

TEST(SolverTest, AdaDelta) {
  std::map<std::pair<size_t, size_t>, std::pair<float, float>> h;
  CheckTwoSteps("AdaDelta", "momentum: 0.95 delta: 1e-6", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int) {
                  auto& acc = h[{p, i}];
                  acc.first = 0.95f * acc.first + 0.05f * g * g;
                  const float step = g * std::sqrt(acc.second + 1e-6f) / std::sqrt(acc.first + 1e-6f);
                  acc.second = 0.95f * acc.second + 0.05f * step * step;
                  return w - lr * step;
                });
}

TEST(SolverTest, Adam) {
  std::map<std::pair<size_t, size_t>, std::pair<float, float>> h;
  CheckTwoSteps("Adam", "momentum: 0.9 momentum2: 0.999 delta: 1e-8", 0.f,
                [&](size_t p, size_t i, float w, float g, float lr, int t) {
                  auto& mv = h[{p, i}];
                  mv.first = 0.9f * mv.first + 0.1f * g;
                  mv.second = 0.999f * mv.second + 0.001f * g * g;
                  const double step = t + 1;
                  const double corr = std::sqrt(1 - std::pow(0.999, step)) / (1 - std::pow(0.9, step));
                  return static_cast<float>(w - lr * corr * mv.first / (std::sqrt(mv.second) + 1e-8f));
                });
}

TEST(SolverTest, LegacySolverTypeIsUpgraded) {
  SolverParameter param = MakeSolverParam("SGD");
  param.clear_type();
  param.set_solver_type(SolverParameter::ADAM);
  auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>());
  EXPECT_STREQ(solver->type(), "Adam");
}

// An exchange option that was removed is refused by name, with the line and where its
// record is; a comment that mentions one, and the options that stay, load.
TEST(SolverTest, RemovedSyncOptionsAreRefusedByName) {
  const string dir = MakeTempDir("removed");
  const string base = "base_lr: 0.1\nmax_iter: 1\nsync_param {\n  method: IWP\n";
  for (const string option :
       {"weight_floor: 1", "rescale_residuals: true", "residual_leak: 0.1",
        "flush_at_rate_drop: true", "flush_at_end: true", "consensus_prior: 0.5",
        "measure_capture: true", "score: BATCHNORM_AWARE", "score: BATCHNORM_AWARE_CHANNELS"}) {
    const string file = dir + "/solver.prototxt";
    WriteFileAtomically(file, base + "  " + option + "\n}\n");
    SolverParameter param;
    try {
      ReadSolverParamsFromTextFile(file, &param);
      FAIL() << option << ": expected an error";
    } catch (const Error& e) {
      const string what = e.what();
      const string name = option.substr(0, option.find(':'));
      EXPECT_NE(what.find(file + ":5: sync_param." + name), string::npos) << what;
      EXPECT_NE(what.find("was removed"), string::npos) << what;
      EXPECT_NE(what.find("results/iwp_explore/NOTEBOOK.md"), string::npos) << what;
      if (name == "score") {
        EXPECT_NE(what.find(option.substr(7)), string::npos) << what;
      }
    }
  }
  EXPECT_NO_THROW(RejectRemovedSolverOptions(base + "  # weight_floor: 1 was tried\n}\n", "s"));
  EXPECT_NO_THROW(RejectRemovedSolverOptions(base + "  score: MAGNITUDE\n}\n", "s"));
  EXPECT_NO_THROW(RejectRemovedSolverOptions("snapshot_prefix: 'a#flush_at_end: 1'\n", "s"));
  EXPECT_THROW(RejectRemovedSolverOptions("sync_param { method: IWP flush_at_end: true }", "s"),
               Error);
}

// A solver that sets the per-method settings flat in sync_param (the form before
// iwp_param, powersgd_param and scalecom_param) is upgraded on load, and then trains
// as the nested form does; a setting given both ways, or a flat one that reaches an
// exchange without the upgrade, is refused.
TEST(SolverTest, FlatSyncSettingsAreUpgradedIntoTheirMethods) {
  const string dir = MakeTempDir("flat_sync");
  const string file = dir + "/solver.prototxt";
  WriteFileAtomically(file,
                      "base_lr: 0.1\nmax_iter: 1\nsync_param {\n  method: IWP density: 0.1\n"
                      "  vmr_exponent: 1 leader: PER_LAYER score: MAGNITUDE layer_wise: true\n"
                      "  epsilon: 1e-4 stochastic_fraction: 0.2 threshold_mode: SAMPLED\n"
                      "  sample_fraction: 0.5 fixed_threshold: 2 powersgd_rank: 3\n"
                      "  scalecom_beta: 0.5\n}\n");
  SolverParameter param;
  ReadSolverParamsFromTextFile(file, &param);
  const SyncParameter& sync = param.sync_param();
  EXPECT_EQ(FlatMethodFieldsSet(sync), "");
  EXPECT_FLOAT_EQ(sync.density(), 0.1f);
  EXPECT_FLOAT_EQ(sync.iwp_param().vmr_exponent(), 1.f);
  EXPECT_EQ(sync.iwp_param().leader(), IwpParameter::PER_LAYER);
  EXPECT_EQ(sync.iwp_param().score(), IwpParameter::MAGNITUDE);
  EXPECT_TRUE(sync.iwp_param().has_layer_wise());
  EXPECT_FLOAT_EQ(sync.iwp_param().epsilon(), 1e-4f);
  EXPECT_FLOAT_EQ(sync.iwp_param().stochastic_fraction(), 0.2f);
  EXPECT_EQ(sync.iwp_param().threshold_mode(), IwpParameter::SAMPLED);
  EXPECT_FLOAT_EQ(sync.iwp_param().sample_fraction(), 0.5f);
  EXPECT_FLOAT_EQ(sync.iwp_param().fixed_threshold(), 2.f);
  EXPECT_EQ(sync.powersgd_param().rank(), 3);
  EXPECT_FLOAT_EQ(sync.scalecom_param().beta(), 0.5f);
  EXPECT_FALSE(UpgradeSyncParameter(file, param.mutable_sync_param())) << "nothing left to move";

  // The same settings nested: the same message.
  SolverParameter nested;
  ParseProtoFromText(
      "base_lr: 0.1 max_iter: 1 sync_param { method: IWP density: 0.1 iwp_param { "
      "vmr_exponent: 1 leader: PER_LAYER score: MAGNITUDE layer_wise: true epsilon: 1e-4 "
      "stochastic_fraction: 0.2 threshold_mode: SAMPLED sample_fraction: 0.5 fixed_threshold: 2 } "
      "powersgd_param { rank: 3 } scalecom_param { beta: 0.5 } }",
      "<nested>", &nested);
  EXPECT_EQ(param.SerializeAsString(), nested.SerializeAsString());

  SyncParameter both;
  ParseProtoFromText("vmr_exponent: 1 iwp_param { vmr_exponent: 0 }", "<both>", &both);
  try {
    UpgradeSyncParameter("s.prototxt", &both);
    FAIL() << "a setting given both ways must be refused";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("s.prototxt: sync_param sets both vmr_exponent and "
                                    "iwp_param.vmr_exponent"),
              string::npos)
        << e.what();
  }
  SyncParameter flat;
  ParseProtoFromText("method: POWERSGD powersgd_rank: 2", "<flat>", &flat);
  EXPECT_THROW(CreateGradientExchange(flat, std::make_shared<LocalCommunicator>()), Error);
  EXPECT_THROW(ValidateSyncParameter(flat, "s.prototxt"), Error);
}

// Changing `method` is the only edit needed to compare methods: each method checks its
// own settings and ignores the others'.
TEST(SolverTest, AMethodIgnoresTheOtherMethodsSettings) {
  SyncParameter sync;
  ParseProtoFromText(
      "density: 0.05 max_relative_step: 0.5 momentum_correction: true "
      "iwp_param { epsilon: 0 stochastic_fraction: 0.3 } powersgd_param { rank: 0 } "
      "scalecom_param { beta: 0 }",
      "<sync>", &sync);
  for (auto method :
       {SyncParameter::DENSE, SyncParameter::TOPK_ALLGATHER, SyncParameter::RANDOMK}) {
    sync.set_method(method);
    EXPECT_NO_THROW(ValidateSyncParameter(sync, "s")) << SyncParameter::Method_Name(method);
  }
  // Each method that has a sub-message refuses its own bad setting, and only that one.
  for (auto [method, field] : {std::pair{SyncParameter::IWP, "iwp_param.epsilon"},
                               std::pair{SyncParameter::POWERSGD, "powersgd_param.rank"},
                               std::pair{SyncParameter::SCALECOM, "scalecom_param.beta"}}) {
    sync.set_method(method);
    try {
      ValidateSyncParameter(sync, "s");
      ADD_FAILURE() << SyncParameter::Method_Name(method) << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(string(e.what()).find(string("s: sync_param.") + field), string::npos) << e.what();
    }
  }
  // POWERSGD ignores the coordinate settings (momentum_correction, max_relative_step):
  // it leaves the solver's momentum alone and asks for no step rates.
  sync.set_method(SyncParameter::POWERSGD);
  sync.mutable_powersgd_param()->set_rank(2);
  EXPECT_NO_THROW(ValidateSyncParameter(sync, "s"));
  auto powersgd = CreateGradientExchange(sync, std::make_shared<LocalCommunicator>());
  EXPECT_FALSE(powersgd->TakeOverMomentum(0.9f));
  EXPECT_FALSE(powersgd->wants_learning_rate());
}

// Each policy's rate at several iterations against its formula.
TEST(SolverTest, LearningRatePolicies) {
  struct Case {
    string settings;
    std::function<double(int)> formula;
  };
  const double base = 0.1;
  vector<Case> cases = {
      {"lr_policy: 'fixed'", [&](int) { return base; }},
      {"lr_policy: 'step' gamma: 0.5 stepsize: 3",
       [&](int t) { return base * std::pow(0.5, t / 3); }},
      {"lr_policy: 'exp' gamma: 0.9", [&](int t) { return base * std::pow(0.9, t); }},
      {"lr_policy: 'inv' gamma: 0.1 power: 0.75",
       [&](int t) { return base * std::pow(1 + 0.1 * t, -0.75); }},
      {"lr_policy: 'multistep' gamma: 0.1 stepvalue: 2 stepvalue: 5",
       [&](int t) { return base * std::pow(0.1, (t >= 2) + (t >= 5)); }},
      {"lr_policy: 'poly' power: 2",
       [&](int t) { return base * std::pow(1 - t / 10.0, 2); }},
      {"lr_policy: 'sigmoid' gamma: -0.5 stepsize: 4",
       [&](int t) { return base / (1 + std::exp(0.5 * (t - 4))); }},
  };
  for (const Case& c : cases) {
    SolverParameter param = MakeSolverParam("SGD", c.settings);
    param.set_max_iter(10);
    auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>());
    FillInputs(solver->net().get());
    for (int t = 0; t < 8; ++t) {
      EXPECT_NEAR(solver->GetLearningRate(), c.formula(t), 1e-6) << c.settings << " at " << t;
      solver->Step(1);
    }
  }
}

TEST(SolverTest, LinearWarmup) {
  SolverParameter param =
      MakeSolverParam("SGD", "lr_policy: 'step' gamma: 0.5 stepsize: 100 warmup_iter: 4 "
                             "warmup_start_factor: 0.2");
  auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>());
  FillInputs(solver->net().get());
  for (int t = 0; t < 6; ++t) {
    const double factor = t < 4 ? 0.2 + 0.8 * (t + 1) / 4.0 : 1.0;
    EXPECT_NEAR(solver->GetLearningRate(), 0.1 * factor, 1e-7) << "iteration " << t;
    solver->Step(1);
  }
}

TEST(SolverTest, IterSizeAveragesGradients) {
  // Fixed inputs: two accumulated passes averaged equal one pass.
  auto a = SolverRegistry::CreateSolver(MakeSolverParam("SGD", "iter_size: 2"),
                                        std::make_shared<Context>());
  auto b = SolverRegistry::CreateSolver(MakeSolverParam("SGD"), std::make_shared<Context>());
  FillInputs(a->net().get());
  FillInputs(b->net().get());
  a->Step(3);
  b->Step(3);
  auto wa = Values(a->net()->learnable_params(), false);
  auto wb = Values(b->net()->learnable_params(), false);
  for (size_t p = 0; p < wa.size(); ++p)
    for (size_t i = 0; i < wa[p].size(); ++i) EXPECT_NEAR(wa[p][i], wb[p][i], 1e-6);
}

TEST(SolverTest, ClipGradientsBoundsTheGlobalNorm) {
  auto solver = SolverRegistry::CreateSolver(MakeSolverParam("SGD", "clip_gradients: 0.01"),
                                             std::make_shared<Context>());
  Net* net = solver->net().get();
  FillInputs(net);
  auto w = Values(net->learnable_params(), false);
  auto g = Gradient(net);
  double norm = 0;
  for (auto& p : g)
    for (float x : p) norm += x * x;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 0.01);
  solver->Step(1);
  auto w_new = Values(net->learnable_params(), false);
  for (size_t p = 0; p < w.size(); ++p)
    for (size_t i = 0; i < w[p].size(); ++i) {
      const float lr = 0.1f * net->params_lr()[p];
      EXPECT_NEAR(w_new[p][i], w[p][i] - lr * g[p][i] * 0.01 / norm, 1e-6);
    }
}

// A net whose input is re-drawn every forward, so resuming must also restore the
// random stream to be exact.
SolverParameter ResumeParam(const string& type, const string& prefix) {
  SolverParameter param = ParseSolver(
      "base_lr: 0.05 momentum: 0.9 momentum2: 0.99 lr_policy: 'multistep' gamma: 0.5 "
      "stepvalue: 3 stepvalue: 7 max_iter: 10 random_seed: 3 display: 0 "
      "snapshot_after_train: false weight_decay: 0.001");
  param.set_type(type);
  param.set_snapshot_prefix(prefix);
  *param.mutable_net_param() = ParseNet(R"(
    layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
            dummy_data_param { shape { dim: 8 dim: 5 } shape { dim: 8 dim: 3 }
                               data_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h'
            inner_product_param { num_output: 6 weight_filler { type: 'xavier' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'pred'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'pred' bottom: 'y' top: 'loss' })");
  return param;
}

TEST(SolverTest, SnapshotAndResumeIsBitExact) {
  for (const string type : {"SGD", "Adam", "AdaDelta"}) {
    const string dir = MakeTempDir("resume");
    auto straight = SolverRegistry::CreateSolver(ResumeParam(type, dir + "/a"),
                                                 std::make_shared<Context>());
    straight->Step(10);

    auto first = SolverRegistry::CreateSolver(ResumeParam(type, dir + "/b"),
                                              std::make_shared<Context>());
    first->Step(5);
    first->Snapshot();
    ASSERT_TRUE(FileExists(dir + "/b_iter_5.caffemodel"));
    ASSERT_TRUE(FileExists(dir + "/b_iter_5.solverstate"));

    // A fresh process would start from a different random init: use another seed.
    SolverParameter other = ResumeParam(type, dir + "/b");
    other.set_random_seed(99);
    auto resumed = SolverRegistry::CreateSolver(other, std::make_shared<Context>());
    resumed->Restore(dir + "/b_iter_5.solverstate");
    EXPECT_EQ(resumed->iter(), 5);
    resumed->Step(5);

    const auto& a = straight->net()->learnable_params();
    const auto& b = resumed->net()->learnable_params();
    ASSERT_EQ(a.size(), b.size());
    for (size_t p = 0; p < a.size(); ++p)
      for (int64_t i = 0; i < a[p]->count(); ++i)
        ASSERT_EQ(a[p]->cpu_data()[i], b[p]->cpu_data()[i]) << type << " param " << p << " element " << i;
  }
}

// snapshot_format HDF5: the weights (and, with snapshot_diff, the gradients) go to
// <prefix>_iter_N.caffemodel.h5 in BVLC's layout, the binary .solverstate names that
// file, and resuming from it gives the losses and weights of a run never interrupted.
TEST(SolverTest, Hdf5SnapshotResumesToTheSameLosses) {
  const string dir = MakeTempDir("resume_hdf5");
  auto make = [&](const string& prefix, int64_t seed) {
    SolverParameter param = ResumeParam("SGD", prefix);
    param.set_snapshot_format(SolverParameter::HDF5);
    param.set_snapshot_diff(true);
    param.set_random_seed(seed);
    return SolverRegistry::CreateSolver(param, std::make_shared<Context>());
  };
  // The losses of five more iterations, one at a time.
  auto next_losses = [](Solver* solver) {
    vector<float> losses;
    for (int i = 0; i < 5; ++i) {
      solver->Step(1);
      losses.push_back(solver->net()->blob_by_name("loss")->cpu_data()[0]);
    }
    return losses;
  };
  auto straight = make(dir + "/a", 3);
  straight->Step(5);
  const vector<float> straight_losses = next_losses(straight.get());

  auto first = make(dir + "/b", 3);
  first->Step(5);
  const string weights = dir + "/b_iter_5.caffemodel.h5";
  EXPECT_EQ(first->Snapshot(), weights);
  ASSERT_TRUE(FileExists(weights));
  ASSERT_TRUE(FileExists(dir + "/b_iter_5.solverstate"));
  EXPECT_FALSE(FileExists(dir + "/b_iter_5.caffemodel")) << "the HDF5 file replaces it";
  EXPECT_EQ(Hdf5TestGroupMembers(weights, "/"), (vector<string>{"data", "diff"}));
  EXPECT_EQ(Hdf5TestGroupMembers(weights, "data/ip1"), (vector<string>{"0", "1"}));

  // A fresh process would start from a different random init: use another seed.
  auto resumed = make(dir + "/b", 99);
  resumed->Restore(dir + "/b_iter_5.solverstate");
  EXPECT_EQ(resumed->iter(), 5);
  EXPECT_EQ(next_losses(resumed.get()), straight_losses);
  const auto& a = straight->net()->learnable_params();
  const auto& b = resumed->net()->learnable_params();
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p)
    for (int64_t i = 0; i < a[p]->count(); ++i)
      ASSERT_EQ(a[p]->cpu_data()[i], b[p]->cpu_data()[i]) << "param " << p << " element " << i;

  // BVLC's own HDF5 solver state is not this project's format: refused by name.
  const string bvlc_state = dir + "/b_iter_5.solverstate.h5";
  EXPECT_EQ(ErrorOf([&] { resumed->Restore(bvlc_state); }),
            bvlc_state +
                ": BVLC Caffe's HDF5 solver state cannot be resumed here; snapshots "
                "in either snapshot_format write a binary .solverstate, resume from "
                "that");
}

// A one-process run with a sparse exchange keeps residuals (and ages) that a resume
// must restore like any other state.
TEST(SolverTest, OneRankSparseExchangeResumesExactly) {
  const string dir = MakeTempDir("resume_sync");
  auto make = [&](const string& prefix, int64_t seed) {
    SolverParameter param = ResumeParam("SGD", prefix);
    param.set_random_seed(seed);
    ParseProtoFromText(
        "method: IWP density: 0.2 min_layer_size: 10 iwp_param { stochastic_fraction: 0.3 }",
        "<sync>", param.mutable_sync_param());
    auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>());
    solver->set_gradient_exchange(
        CreateGradientExchange(param.sync_param(), std::make_shared<LocalCommunicator>()));
    return solver;
  };
  auto straight = make(dir + "/a", 3);
  straight->Step(10);
  auto first = make(dir + "/b", 3);
  first->Step(5);
  first->Snapshot();
  ASSERT_TRUE(FileExists(dir + "/b_iter_5.rank0.solverstate")) << "the residuals must be saved";
  auto resumed = make(dir + "/b", 99);
  resumed->Restore(dir + "/b_iter_5.solverstate");
  resumed->Step(5);
  const auto& a = straight->net()->learnable_params();
  const auto& b = resumed->net()->learnable_params();
  for (size_t p = 0; p < a.size(); ++p)
    for (int64_t i = 0; i < a[p]->count(); ++i)
      ASSERT_EQ(a[p]->cpu_data()[i], b[p]->cpu_data()[i]) << "param " << p << " element " << i;
}

// With momentum correction the exchange applies the momentum, so the weight decay
// must be inside what it accumulates: at density 1 that is exactly the dense
// momentum solver (decay added after the exchange would lose the 1 / (1 - m) gain).
TEST(SolverTest, MomentumCorrectionKeepsTheDenseDecay) {
  auto make = [](bool corrected) {
    SolverParameter param = MakeSolverParam("SGD", "momentum: 0.9 weight_decay: 0.2");
    if (corrected) {
      ParseProtoFromText("method: IWP density: 1 momentum_correction: true", "<sync>",
                         param.mutable_sync_param());
    }
    auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>());
    if (corrected) {
      solver->set_gradient_exchange(
          CreateGradientExchange(param.sync_param(), std::make_shared<LocalCommunicator>()));
    }
    FillInputs(solver->net().get());
    return solver;
  };
  auto dense = make(false);
  auto corrected = make(true);
  for (size_t p = 0; p < dense->net()->learnable_params().size(); ++p) {
    corrected->net()->learnable_params()[p]->CopyFrom(*dense->net()->learnable_params()[p]);
  }
  dense->Step(20);
  corrected->Step(20);
  for (size_t p = 0; p < dense->net()->learnable_params().size(); ++p) {
    const Blob& a = *dense->net()->learnable_params()[p];
    const Blob& b = *corrected->net()->learnable_params()[p];
    for (int64_t i = 0; i < a.count(); ++i) {
      EXPECT_NEAR(b.cpu_data()[i], a.cpu_data()[i], 1e-4f * std::max(1.f, std::fabs(a.cpu_data()[i])))
          << "param " << p << " element " << i;
    }
  }
}

TEST(SolverTest, StateFromADifferentNetIsRejected) {
  const string dir = MakeTempDir("mismatch");
  auto first = SolverRegistry::CreateSolver(ResumeParam("SGD", dir + "/x"),
                                            std::make_shared<Context>());
  first->Step(1);
  first->Snapshot();
  auto other = SolverRegistry::CreateSolver(MakeSolverParam("SGD"), std::make_shared<Context>());
  try {
    other->Restore(dir + "/x_iter_1.solverstate");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("x_iter_1"), string::npos) << e.what();
  }
}

TEST(SolverTest, BadParametersAreErrors) {
  auto expect_error = [](const SolverParameter& p, const string& fragment) {
    try {
      SolverRegistry::CreateSolver(p, std::make_shared<Context>(), "s.prototxt");
      ADD_FAILURE() << "expected an error containing: " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(string(e.what()).find(fragment), string::npos) << e.what();
    }
  };
  SolverParameter p = MakeSolverParam("SGD");
  p.set_max_iter(0);
  expect_error(p, "s.prototxt: max_iter must be positive, found 0");
  p = MakeSolverParam("SGD");
  p.set_base_lr(-1);
  expect_error(p, "s.prototxt: base_lr must not be negative, found -1");
  expect_error(MakeSolverParam("Bogus"), "s.prototxt: unknown solver type 'Bogus'");
  p = MakeSolverParam("SGD");
  p.set_lr_policy("zigzag");
  expect_error(p, "s.prototxt: unknown lr_policy \"zigzag\"");
  p = MakeSolverParam("SGD");
  p.clear_net_param();
  expect_error(p, "s.prototxt: no net given");
}

}  // namespace
}  // namespace caffe

namespace caffe {
namespace {

TEST(SolverTest, NonFiniteLossStopsTrainingNamingTheLayer) {
  SolverParameter param = MakeSolverParam("SGD");
  param.set_base_lr(1e30f);
  auto solver = SolverRegistry::CreateSolver(param, std::make_shared<Context>(), "s.prototxt");
  FillInputs(solver->net().get());
  try {
    solver->Step(10);
    FAIL() << "expected training to stop";
  } catch (const Error& e) {
    const string msg = e.what();
    EXPECT_NE(msg.find("s.prototxt: iteration "), string::npos) << msg;
    EXPECT_NE(msg.find("first non-finite output: layer 'loss' (EuclideanLoss)"), string::npos) << msg;
  }
}

}  // namespace
}  // namespace caffe
