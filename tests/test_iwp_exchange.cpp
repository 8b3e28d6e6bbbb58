// IWP's exchange on one rank (the multi-rank properties are in test_mpi_exchange):
// importance divides by |w|, a zero importance never travels, the budget plan keeps
// the blobs sent whole within max_dense_share, the stochastic update bounds the age
// of coordinates the leader would never pick, PER_LAYER budgets add up, non-finite
// residuals are errors, and the state (ages included) round-trips.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "caffe/exchanges/iwp_exchange.hpp"
#include "caffe/sync/host_residual_kernels.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

SyncParameter Sync(const string& text) {
  SyncParameter p;
  ParseProtoFromText(text, "<sync>", &p);
  if (!p.has_method()) p.set_method(SyncParameter::IWP);
  if (!p.has_min_layer_size()) p.set_min_layer_size(100);
  return p;
}

std::unique_ptr<IwpExchange> MakeIwp(const string& text) {
  return std::make_unique<IwpExchange>(Sync(text),
                                       Transport(std::make_shared<LocalCommunicator>()));
}

struct Params {
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> ptrs;
  explicit Params(const vector<int64_t>& sizes) {
    for (int64_t n : sizes) {
      blobs.push_back(std::make_unique<Blob>(vector<int64_t>{n}));
      FillUniform(blobs.back().get(), 0.5f, 1.5f, 100 + n);
      ptrs.push_back(blobs.back().get());
    }
  }
  void SetGradients(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0, 1);
    for (Blob* b : ptrs) {
      float* g = b->mutable_cpu_diff();
      for (int64_t i = 0; i < b->count(); ++i) g[i] = dist(rng);
    }
  }
};

vector<int32_t> SentIndices(const Blob& blob) {
  vector<int32_t> out;
  for (int64_t i = 0; i < blob.count(); ++i) {
    if (blob.cpu_diff()[i] != 0) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

// Equal gradients everywhere: only |w| tells the coordinates apart, so IWP must send
// the smallest weights, and ranking by |v| alone (score: MAGNITUDE) must not.
TEST(IwpExchangeLocalTest, ImportanceDividesByTheWeight) {
  for (const string score : {"IMPORTANCE", "MAGNITUDE"}) {
    auto exchange = MakeIwp("density: 0.1 iwp_param { score: " + score + " }");
    Params params({1000});
    Blob& blob = *params.ptrs[0];
    float* w = blob.mutable_cpu_data();
    // Weights 1000, 999, ..., 1 (as 1000 - i): the 100 smallest are the last 100.
    for (int64_t i = 0; i < 1000; ++i) w[i] = static_cast<float>(1000 - i) * (i % 2 ? -1.f : 1.f);
    float* g = blob.mutable_cpu_diff();
    for (int64_t i = 0; i < 1000; ++i) g[i] = 0.25f;
    exchange->Exchange(0, params.ptrs);
    const vector<int32_t> sent = SentIndices(blob);
    ASSERT_EQ(sent.size(), 100u) << score;
    if (score == "IMPORTANCE") {
      EXPECT_EQ(sent.front(), 900) << "the largest-importance coordinates are the smallest weights";
    } else {
      EXPECT_EQ(sent.front(), 0) << "by magnitude all tie, and ties go to the lower index";
    }
  }
}

// Fewer coordinates hold anything than the budget allows: only they travel, in every
// threshold mode (a threshold of 0 used to send whole blobs).
TEST(IwpExchangeLocalTest, ZeroImportanceNeverTravels) {
  for (const string mode :
       {"iwp_param { layer_wise: true threshold_mode: EXACT }",
        "iwp_param { layer_wise: true threshold_mode: SAMPLED sample_fraction: 0.5 }",
        "iwp_param { layer_wise: false threshold_mode: EXACT }",
        "iwp_param { layer_wise: false threshold_mode: SAMPLED sample_fraction: 0.5 }",
        "method: FIXED_THRESHOLD iwp_param { fixed_threshold: 0 }"}) {
    auto exchange = MakeIwp("density: 0.5 " + string(mode));
    Params params({1000, 2000});
    for (Blob* b : params.ptrs) {
      float* g = b->mutable_cpu_diff();
      for (int64_t i = 0; i < b->count(); ++i) g[i] = i % 100 == 3 ? 1.f : 0.f;
    }
    exchange->Exchange(0, params.ptrs);
    const auto& blobs = exchange->stats().last_step_blobs();
    EXPECT_EQ(blobs[0].sent, 10) << mode;
    EXPECT_EQ(blobs[1].sent, 20) << mode;
  }
}

// ResNet-20-like sizes at 1/64: the small blobs alone exceed the budget. The plan
// sparsifies the largest of them until the rest fits in max_dense_share, and the
// whole step then sends the budget.
TEST(IwpExchangeLocalTest, BlobsSentWholeFitInTheirShareOfTheBudget) {
  vector<int64_t> sizes = {9216, 9216, 36864, 36864, 144864};  // convolutions
  for (int i = 0; i < 24; ++i) sizes.push_back(i % 3 == 0 ? 128 : 32);  // scale / shift
  sizes.push_back(640);  // classifier
  sizes.push_back(144);  // conv1
  sizes.push_back(10);   // classifier bias
  int64_t total = 0, small = 0;
  for (int64_t n : sizes) {
    total += n;
    if (n < 1024) small += n;
  }
  const double budget = total / 64.0;
  ASSERT_GT(small, 0.5 * budget) << "the fixture must crowd the budget";
  auto exchange = MakeIwp("density: 0.015625 min_layer_size: 1024 max_dense_share: 0.25");
  Params params(sizes);
  params.SetGradients(3);
  exchange->Exchange(0, params.ptrs);
  int64_t whole = 0, sent = 0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    if (exchange->dense_blobs()[b]) whole += sizes[b];
    sent += exchange->stats().last_step_blobs()[b].sent;
  }
  EXPECT_LE(whole, 0.25 * budget);
  EXPECT_GT(whole, 0) << "the smallest blobs still go whole";
  EXPECT_FALSE(exchange->dense_blobs()[sizes.size() - 3]) << "the classifier (640) is sparsified first";
  EXPECT_TRUE(exchange->dense_blobs()[sizes.size() - 1]) << "the 10-element bias stays whole";
  EXPECT_NEAR(static_cast<double>(sent), budget, 2.0);
}

// A coordinate whose gradient is always tiny never wins the leader's top-k. Without
// the stochastic update it waits for the whole run; with it, its age stays bounded.
TEST(IwpExchangeLocalTest, StochasticUpdateBoundsTheAge) {
  int64_t max_age[2];
  for (int with : {0, 1}) {
    auto exchange =
        MakeIwp(with ? "density: 0.05 iwp_param { stochastic_fraction: 0.5 }" : "density: 0.05");
    Params params({2000});
    const int steps = 300;
    for (int t = 0; t < steps; ++t) {
      params.SetGradients(t);
      float* g = params.ptrs[0]->mutable_cpu_diff();
      for (int64_t i = 1000; i < 2000; ++i) g[i] *= 1e-6f;  // the half that never wins
      exchange->Exchange(t, params.ptrs);
    }
    double mean = 0;
    exchange->CurrentAge(&max_age[with], &mean);
    EXPECT_GT(mean, 0);
  }
  EXPECT_EQ(max_age[0], 300) << "without the stochastic update the quiet half never travels";
  EXPECT_LT(max_age[1], 200);
}

// The after-warm-up totals (the Final line's compression ratios) start when the
// density ramp ends, not at the first sparse step.
TEST(IwpExchangeLocalTest, SteadyStateStatisticsStartAfterTheDensityRamp) {
  auto exchange = MakeIwp(
      "density: 0.05 warmup_iter: 2 density_schedule: 0.5 density_schedule: 0.2 "
      "density_schedule_iter: 3");
  Params params({2000});
  const int steps = 12;
  for (int t = 0; t < steps; ++t) {
    params.SetGradients(t);
    exchange->Exchange(t, params.ptrs);
  }
  const ExchangeStats& stats = exchange->stats();
  EXPECT_EQ(stats.total_steps(), steps);
  EXPECT_EQ(stats.sparse_steps(), steps - 2 - 2 * 3);
  EXPECT_EQ(stats.sparse_elements(), (steps - 8) * 2000);
  // At density 0.05 of one 2000-element blob: 100 values a step.
  EXPECT_EQ(stats.sparse_sent(), (steps - 8) * 100);
}

// The draw is a function of shared state only: two exchanges that saw the same steps
// draw the same set, and about the expected number.
TEST(IwpExchangeLocalTest, StochasticDrawIsRepeatableAndSizedByTheBudget) {
  auto a = MakeIwp("density: 0.02 iwp_param { stochastic_fraction: 0.5 }");
  auto b = MakeIwp("density: 0.02 iwp_param { stochastic_fraction: 0.5 }");
  Params pa({20000}), pb({20000});
  for (int t = 0; t < 20; ++t) {
    pa.SetGradients(t);
    pb.SetGradients(t);
    a->Exchange(t, pa.ptrs);
    b->Exchange(t, pb.ptrs);
    ASSERT_EQ(SentIndices(*pa.ptrs[0]), SentIndices(*pb.ptrs[0])) << "step " << t;
    // The budget is 400: the draw's ~200 plus the leader's rest.
    EXPECT_NEAR(static_cast<double>(a->stats().last_step_blobs()[0].sent), 400, 40) << "step " << t;
  }
}

// PER_LAYER splits the budget by the VMRs of the previous step's messages, so every
// rank computes the same budgets; they add up to the target.
TEST(IwpExchangeLocalTest, PerLayerBudgetsAddUpToTheTarget) {
  auto exchange = MakeIwp("density: 0.05 iwp_param { leader: PER_LAYER }");
  Params params({4000, 3000, 2000});
  for (int t = 0; t < 5; ++t) {
    params.SetGradients(t);
    float* g = params.ptrs[1]->mutable_cpu_diff();
    for (int64_t i = 0; i < 3000; i += 50) g[i] *= 40;  // a peaked blob: larger VMR
    exchange->Exchange(t, params.ptrs);
    const auto& blobs = exchange->stats().last_step_blobs();
    EXPECT_EQ(blobs[0].sent + blobs[1].sent + blobs[2].sent, 450) << "step " << t;
    if (t > 0) {
      EXPECT_GT(blobs[1].sent, 150) << "the peaked blob earns more than its size share";
    }
  }
}

// The rate limit: no applied value moves its weight by more than the bound, the
// rest waits in the residual, and the bound bites on long-delayed sums.
TEST(IwpExchangeLocalTest, RateLimitBoundsTheStepAndKeepsTheRest) {
  auto exchange = MakeIwp("density: 0.05 max_relative_step: 0.1");
  exchange->TakeOverMomentum(0.9f);  // not taken: the solver's momentum gain is 10
  Params params({4000});
  const float rate = 0.5f;
  double held_back = 0;
  for (int t = 0; t < 30; ++t) {
    params.SetGradients(t);
    vector<float> before = t == 0 ? vector<float>(4000, 0.f) : exchange->residual(0);
    const float* g = params.ptrs[0]->cpu_diff();
    for (int64_t i = 0; i < 4000; ++i) before[i] += g[i];
    exchange->set_learning_rate(rate);
    exchange->Exchange(t, params.ptrs);
    const Blob& blob = *params.ptrs[0];
    double squares = 0;
    for (int64_t i = 0; i < 4000; ++i) squares += double(blob.cpu_data()[i]) * blob.cpu_data()[i];
    const double rms = std::sqrt(squares / 4000);
    for (int64_t i = 0; i < 4000; ++i) {
      const float applied = blob.cpu_diff()[i];
      const double bound = 0.1 * (std::fabs(blob.cpu_data()[i]) + rms) / (rate * 10);
      ASSERT_LE(std::fabs(applied), bound * (1 + 1e-5)) << "step " << t << " element " << i;
      // Conservation on one rank: what was there = what was applied + what stays.
      ASSERT_NEAR(before[i], applied + exchange->residual(0)[i], 1e-4 * std::max(1.f, std::fabs(before[i])));
      if (applied != 0) held_back += std::fabs(exchange->residual(0)[i]);
    }
  }
  EXPECT_GT(exchange->stats().total_capped(), 0);
  EXPECT_GT(held_back, 0) << "capped values keep the rest";
}

TEST(IwpExchangeLocalTest, NonFiniteResidualIsAnErrorNamingTheBlob) {
  auto exchange = MakeIwp("density: 0.1");
  exchange->Describe({{"conv1[0]", "conv2[0]"}});
  Params params({1000, 1000});
  params.SetGradients(1);
  params.ptrs[1]->mutable_cpu_diff()[7] = std::numeric_limits<float>::quiet_NaN();
  try {
    exchange->Exchange(0, params.ptrs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("conv2[0]"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("not finite"), string::npos) << e.what();
  }
}

// The settings ValidateSyncParameter refuses, and some it accepts.
TEST(IwpExchangeLocalTest, ValidationRefusesBadSettings) {
  for (const string bad :
       {"iwp_param { epsilon: 0 }", "iwp_param { epsilon: -1 }",
        "iwp_param { stochastic_fraction: 1 }", "max_dense_share: 2",
        "iwp_param { leader: PER_LAYER layer_wise: false }", "method: DENSE value_encoding: INT8",
        "method: POWERSGD value_encoding: INT8", "method: TOPK_ALLGATHER value_encoding: INT8"}) {
    EXPECT_THROW(ValidateSyncParameter(Sync(bad), "s.prototxt"), Error) << bad;
  }
  EXPECT_NO_THROW(ValidateSyncParameter(Sync("iwp_param { epsilon: 1e-8 }"), "s.prototxt"));
  for (const string good : {"value_encoding: INT8", "method: RANDOMK value_encoding: INT8",
                            "method: SCALECOM value_encoding: INT8"}) {
    EXPECT_NO_THROW(ValidateSyncParameter(Sync(good), "s.prototxt")) << good;
  }
}

// Residuals, velocities, ages, known importances and PER_LAYER's VMRs come back from
// the saved state: the next steps are identical to those of the original.
TEST(IwpExchangeLocalTest, StateRoundTripsAndIsCheckedAgainstTheNet) {
  for (const string settings :
       {"density: 0.05 iwp_param { stochastic_fraction: 0.3 leader: PER_LAYER }",
        "density: 0.05 iwp_param { stochastic_fraction: 0.3 leader: EVERY_RANK }"}) {
    SCOPED_TRACE(settings);
    auto original = MakeIwp(settings);
    Params a({3000, 2000});
    for (int t = 0; t < 6; ++t) {
      a.SetGradients(t);
      original->Exchange(t, a.ptrs);
    }
    const string state = original->SaveState();
    auto resumed = MakeIwp(settings);
    resumed->Describe({{}, {3000, 2000}});
    resumed->RestoreState(state);
    Params b({3000, 2000});
    for (int t = 6; t < 12; ++t) {
      a.SetGradients(t);
      b.SetGradients(t);
      original->Exchange(t, a.ptrs);
      resumed->Exchange(t, b.ptrs);
      for (size_t k = 0; k < 2; ++k) {
        for (int64_t i = 0; i < a.ptrs[k]->count(); ++i) {
          ASSERT_EQ(a.ptrs[k]->cpu_diff()[i], b.ptrs[k]->cpu_diff()[i]) << "step " << t << " blob " << k;
        }
      }
    }
    // A state of another net is refused at once, naming what differs.
    auto other = MakeIwp(settings);
    other->Describe({{}, {3000, 2001}});
    try {
      other->RestoreState(state);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(string(e.what()).find("2001"), string::npos) << e.what();
    }
  }
}

// The known importance of a sent coordinate is |applied| / |w| (|applied| by
// magnitude); coordinates not selected keep theirs.
TEST(IwpExchangeLocalTest, KnownImportanceIsRecordedAtTheSelection) {
  HostResidualKernels kernels;
  ResidualState state;
  state.residual = {vector<float>(4, 0.f)};
  state.velocity = {vector<float>()};
  state.last_sent = {vector<int32_t>{9, 6, 0, 10}};
  state.known_importance = {vector<float>(4, -1.f)};
  kernels.Load(state);
  Blob blob(vector<int64_t>{4});
  float* w = blob.mutable_cpu_data();
  float* diff = blob.mutable_cpu_diff();
  for (int i = 0; i < 4; ++i) {
    w[i] = 2.f;
    diff[i] = -8.f;
  }
  ResidualSelection selection;
  selection.indices = {0, 3};
  kernels.RecordKnownImportance(0, selection, blob, 0.f, /*divide_by_weight=*/true);
  EXPECT_EQ(kernels.Host().known_importance[0], (vector<float>{4.f, -1.f, -1.f, 4.f}));
  selection.indices = {1};
  kernels.RecordKnownImportance(0, selection, blob, 0.f, /*divide_by_weight=*/false);
  EXPECT_EQ(kernels.Host().known_importance[0], (vector<float>{4.f, 8.f, -1.f, 4.f}));
}

}  // namespace
}  // namespace caffe
