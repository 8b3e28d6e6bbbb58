// The gradient exchange methods on real MPI ranks (ctest runs this under mpirun -np 2
// and -np 4): nothing is lost (conservation), all ranks apply the same gradient,
// leaders agree and are uniform, density 1 equals DENSE, byte counters follow the
// formulas, and N ranks x batch B with DENSE train exactly like 1 rank x batch N*B.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "caffe/data/db.hpp"
#include "caffe/exchanges/dense_exchange.hpp"
#include "caffe/exchanges/iwp_exchange.hpp"
#include "caffe/exchanges/residual_exchange.hpp"
#include "caffe/exchanges/scalecom_exchange.hpp"
#include "caffe/solver.hpp"
#include "caffe/sync/block_int8.hpp"
#include "caffe/sync/half_precision.hpp"
#include "caffe/sync/shared_random.hpp"
#include "caffe/sync/top_k.hpp"
#include "caffe/util/io.hpp"
#include "mpi_test_support.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

using mpi_test::g_comm;
using mpi_test::SameOnAllRanks;
using mpi_test::SumOverRanks;

// The bytes `rank` sends in the 8-bit ring of `count` values, each chunk one piece:
// the chunks it forwards in the reduce-scatter (rank - step) and in the all-gather
// (rank + 1 - step), each a byte a value and a float a block of 64.
int64_t Int8RingBytes(int64_t count, int n, int rank) {
  auto chunk_bytes = [&](int chunk) {
    chunk = ((chunk % n) + n) % n;
    return BlockInt8Bytes(MpiCommunicator::RingChunkBegin(count, n, chunk + 1) -
                          MpiCommunicator::RingChunkBegin(count, n, chunk));
  };
  int64_t bytes = 0;
  for (int step = 0; step < n - 1; ++step) bytes += chunk_bytes(rank - step) + chunk_bytes(rank + 1 - step);
  return bytes;
}

// Parameter blobs of assorted sizes: two large (sparse) ones and two small (dense).
struct FakeParams {
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> ptrs;
  FakeParams() {
    for (int64_t n : {5000, 3000, 40, 700}) {
      blobs.push_back(std::make_unique<Blob>(vector<int64_t>{n}));
      FillUniform(blobs.back().get(), -1, 1, 100 + n);  // same weights on every rank
      ptrs.push_back(blobs.back().get());
    }
  }
  // A fresh local gradient, different on every rank and step.
  void SetGradients(int rank, int step) {
    std::mt19937_64 rng(1000 * rank + step);
    std::normal_distribution<float> dist(0, 1);
    for (Blob* b : ptrs) {
      float* g = b->mutable_cpu_diff();
      // Heavy-tailed in places, so importance varies between blobs.
      for (int64_t i = 0; i < b->count(); ++i) g[i] = dist(rng) * (i % 17 == 0 ? 5.f : 1.f);
    }
  }
};

SyncParameter MakeSync(SyncParameter::Method method, const string& extra = "") {
  SyncParameter p;
  ParseProtoFromText(extra, "<sync>", &p);
  p.set_method(method);
  if (!p.has_density()) p.set_density(0.05f);
  if (!p.has_min_layer_size()) p.set_min_layer_size(1000);
  return p;
}

class ExchangeMethodTest : public ::testing::TestWithParam<std::tuple<SyncParameter::Method, string>> {};

// Every coordinate's two sides agree within `tolerance` x max(1, |expected|). One
// EXPECT per blob, never an ASSERT: a rank that left the test early would leave the
// others waiting in their next collective.
void ExpectConserved(const vector<double>& got, const vector<double>& expected,
                     double tolerance, const string& what) {
  int64_t off = 0, first = -1;
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double relative = std::fabs(got[i] - expected[i]) / std::max(1.0, std::fabs(expected[i]));
    worst = std::max(worst, relative);
    if (relative > tolerance) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++off;
    }
  }
  EXPECT_EQ(off, 0) << what << ": " << off << " coordinate(s) off by more than " << tolerance
                    << " (relative), the first " << first << ", the worst by " << worst;
}

// The conservation checks' tolerance, relative. Only float arithmetic separates the
// two sides (residuals and applied sums are floats, and the FP16 and INT8 roundings
// are put back into them): the worst coordinate of any case here measured 2.2e-5 at
// 4 ranks, so 1e-4 leaves room without hiding a lost value.
constexpr double kConservationTolerance = 1e-4;

// N * sum(applied) + sum over ranks(residual) == sum over ranks and steps of what
// each rank put in: its gradient after local clipping, or with momentum correction
// its velocity u_t = m * (u_{t-1}, masked) + g_t.
TEST_P(ExchangeMethodTest, ConservesEveryCoordinateAndAppliesTheSameGradientEverywhere) {
  const auto [method, extra] = GetParam();
  const SyncParameter sync = MakeSync(method, extra);
  auto exchange = CreateGradientExchange(sync, g_comm);
  const float momentum = 0.5f;
  const bool corrected = exchange->TakeOverMomentum(momentum);
  FakeParams params;
  const int n = g_comm->size();
  const int steps = 50;
  auto* residual_exchange = dynamic_cast<ResidualExchange*>(exchange.get());
  vector<vector<double>> applied(params.ptrs.size()), local(params.ptrs.size());
  for (size_t b = 0; b < params.ptrs.size(); ++b) {
    applied[b].assign(params.ptrs[b]->count(), 0);
    local[b].assign(params.ptrs[b]->count(), 0);
  }
  bool clipped_some = false;
  for (int t = 0; t < steps; ++t) {
    params.SetGradients(g_comm->rank(), t);
    // A rate large enough that the rate limit, where set, cuts values short.
    exchange->set_learning_rate(1.f);
    for (size_t b = 0; b < params.ptrs.size(); ++b) {
      const float* g = params.ptrs[b]->cpu_diff();
      const int64_t count = params.ptrs[b]->count();
      double scale = 1;
      if (sync.clip_norm() > 0) {
        double squares = 0;
        for (int64_t i = 0; i < count; ++i) squares += double(g[i]) * g[i];
        const double limit = sync.clip_norm() / std::sqrt(double(n));
        if (std::sqrt(squares) > limit) {
          scale = limit / std::sqrt(squares);
          clipped_some = true;
        }
      }
      for (int64_t i = 0; i < count; ++i) {
        double input = scale * g[i];
        if (corrected && t > 0) input += momentum * residual_exchange->velocity(b)[i];
        local[b][i] += input;
      }
    }
    exchange->Exchange(t, params.ptrs);
    for (size_t b = 0; b < params.ptrs.size(); ++b) {
      ASSERT_TRUE(SameOnAllRanks(params.ptrs[b]->cpu_diff(), params.ptrs[b]->count()))
          << "blob " << b << " step " << t;
      for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) applied[b][i] += params.ptrs[b]->cpu_diff()[i];
    }
  }
  if (sync.clip_norm() > 0) {
    EXPECT_TRUE(clipped_some) << "the clip norm must bite, or the case proves nothing";
  }
  if (sync.max_relative_step() > 0) {
    EXPECT_GT(exchange->stats().total_capped(), 0) << "the rate limit must bite, or the case proves nothing";
  }
  // DENSE with FP16 keeps what the wire's roundings took in its carry.
  auto* dense_exchange = dynamic_cast<DenseExchange*>(exchange.get());
  const bool half = sync.value_encoding() == SyncParameter::FP16;
  for (size_t b = 0; b < params.ptrs.size(); ++b) {
    vector<double> resid(params.ptrs[b]->count(), 0);
    if (residual_exchange) {
      for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) resid[i] = residual_exchange->residual(b)[i];
    }
    if (dense_exchange && half) {
      for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) resid[i] = dense_exchange->carry(b)[i];
    }
    const vector<double> total_local = SumOverRanks(local[b]);
    const vector<double> total_resid = SumOverRanks(resid);
    vector<double> lhs(params.ptrs[b]->count());
    for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) lhs[i] = n * applied[b][i] + total_resid[i];
    ExpectConserved(lhs, total_local, kConservationTolerance, "blob " + std::to_string(b));
  }
  // A sparse method really held something back (else the test proves nothing), and
  // so did the roundings of FP16.
  if (method != SyncParameter::DENSE) {
    double held = 0;
    for (size_t b = 0; b < 2; ++b)
      for (float v : residual_exchange->residual(b)) held += std::fabs(v);
    EXPECT_GT(held, 0);
  } else if (half) {
    double held = 0;
    for (size_t b = 0; b < params.ptrs.size(); ++b)
      for (float v : dense_exchange->carry(b)) held += std::fabs(v);
    EXPECT_GT(held, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, ExchangeMethodTest,
    ::testing::Values(
        std::make_tuple(SyncParameter::DENSE, string()),
        std::make_tuple(SyncParameter::IWP, string()),
        std::make_tuple(SyncParameter::IWP, string("iwp_param { layer_wise: false }")),
        std::make_tuple(SyncParameter::IWP,
                        string("iwp_param { leader: PER_LAYER stochastic_fraction: 0.1 }")),
        std::make_tuple(SyncParameter::IWP,
                        string("iwp_param { stochastic_fraction: 0.3 score: MAGNITUDE }")),
        std::make_tuple(SyncParameter::IWP,
                        string("iwp_param { leader: EVERY_RANK stochastic_fraction: 0.1 }")),
        std::make_tuple(SyncParameter::IWP, string("clip_norm: 20")),
        std::make_tuple(SyncParameter::IWP, string("max_relative_step: 0.5")),
        std::make_tuple(SyncParameter::IWP, string("max_relative_step: 0.5 momentum_correction: "
                                                   "true iwp_param { leader: EVERY_RANK }")),
        std::make_tuple(SyncParameter::IWP, string("momentum_correction: true")),
        std::make_tuple(
            SyncParameter::IWP,
            string(
                "momentum_correction: true clip_norm: 20 iwp_param { stochastic_fraction: 0.2 }")),
        std::make_tuple(SyncParameter::TOPK_ALLGATHER,
                        string("momentum_correction: true clip_norm: 20")),
        std::make_tuple(SyncParameter::IWP,
                        string("index_encoding: BITMAP iwp_param { threshold_mode: SAMPLED }")),
        std::make_tuple(
            SyncParameter::IWP,
            string("warmup_iter: 3 max_relative_step: 0.5 iwp_param { stochastic_fraction: 0.1 }")),
        std::make_tuple(SyncParameter::IWP,
                        string("warmup_iter: 3 iwp_param { leader: EVERY_RANK }")),
        std::make_tuple(SyncParameter::IWP,
                        string("warmup_iter: 5 density_schedule: 0.5 density_schedule_iter: 5")),
        std::make_tuple(SyncParameter::FIXED_THRESHOLD, string("iwp_param { fixed_threshold: 3 }")),
        std::make_tuple(SyncParameter::TOPK_ALLGATHER, string()),
        std::make_tuple(SyncParameter::RANDOMK, string()),
        std::make_tuple(SyncParameter::SCALECOM, string()),
        std::make_tuple(
            SyncParameter::SCALECOM,
            string("momentum_correction: true clip_norm: 20 scalecom_param { beta: 1 }")),
        std::make_tuple(SyncParameter::SCALECOM, string("max_relative_step: 0.5 warmup_iter: 3")),
        std::make_tuple(SyncParameter::DENSE, string("value_encoding: FP16")),
        std::make_tuple(SyncParameter::IWP,
                        string("value_encoding: FP16 iwp_param { stochastic_fraction: 0.1 }")),
        std::make_tuple(SyncParameter::IWP, string("value_encoding: FP16 max_relative_step: 0.5")),
        std::make_tuple(SyncParameter::RANDOMK, string("value_encoding: FP16 warmup_iter: 3")),
        std::make_tuple(SyncParameter::SCALECOM,
                        string("value_encoding: FP16 momentum_correction: true")),
        std::make_tuple(SyncParameter::TOPK_ALLGATHER, string("value_encoding: FP16")),
        std::make_tuple(SyncParameter::IWP, string("value_encoding: INT8 max_relative_step: 0.5 "
                                                   "iwp_param { stochastic_fraction: 0.1 }")),
        std::make_tuple(SyncParameter::RANDOMK, string("value_encoding: INT8 warmup_iter: 3")),
        std::make_tuple(SyncParameter::SCALECOM,
                        string("value_encoding: INT8 momentum_correction: true"))));

// An overlapped step (BeginBackward, then each bucket as backward reports its layer,
// then Exchange) applies what the whole-step path applies: bit for bit on 2 ranks in
// FP32 (a sum of two numbers has one order), to float rounding on more ranks (the
// ring adds a bucket's elements in another order than the whole step's), and with
// FP16 or INT8 values, whose roundings depend on where an element falls in the ring,
// it conserves every coordinate. It really ran in buckets (the wait after backward is
// timed) on the same ranks in the same order.
TEST(IwpBucketsTest, OverlappedStepsApplyWhatWholeStepsApplyAndConserve) {
  const int n = g_comm->size();
  for (const string extra :
       {"max_relative_step: 0.5 iwp_param { leader: EVERY_RANK stochastic_fraction: 0.1 }",
        "warmup_iter: 3 density_schedule: 0.5 density_schedule_iter: 3 iwp_param { leader: "
        "PER_LAYER }",
        "value_encoding: FP16 iwp_param { leader: EVERY_RANK stochastic_fraction: 0.1 }",
        "value_encoding: INT8 max_relative_step: 0.5 iwp_param { leader: EVERY_RANK }"}) {
    SCOPED_TRACE(extra);
    const SyncParameter sync = MakeSync(SyncParameter::IWP, extra);
    const bool encoded = sync.value_encoding() != SyncParameter::FP32;
    auto overlapped = CreateGradientExchange(sync, g_comm);
    auto whole = CreateGradientExchange(sync, g_comm);
    // FakeParams' blobs finish in three layers: 5000 first, then 3000, then 40 and 700.
    overlapped->Describe({{}, {}, {}, {2, 1, 0, 0}});
    whole->Describe({{}, {}, {}, {2, 1, 0, 0}});
    FakeParams a, b;
    auto* residual = dynamic_cast<ResidualExchange*>(overlapped.get());
    vector<vector<double>> applied(a.ptrs.size()), local(a.ptrs.size());
    for (size_t k = 0; k < a.ptrs.size(); ++k) {
      applied[k].assign(a.ptrs[k]->count(), 0);
      local[k].assign(a.ptrs[k]->count(), 0);
    }
    for (int t = 0; t < 20; ++t) {
      a.SetGradients(g_comm->rank(), t);
      b.SetGradients(g_comm->rank(), t);
      for (size_t k = 0; k < a.ptrs.size(); ++k) {
        for (int64_t i = 0; i < a.ptrs[k]->count(); ++i) local[k][i] += a.ptrs[k]->cpu_diff()[i];
      }
      overlapped->BeginBackward(t, a.ptrs);
      for (int layer : {2, 1, 0}) overlapped->OnLayerBackward(layer);
      overlapped->set_learning_rate(1.f);
      whole->set_learning_rate(1.f);
      overlapped->Exchange(t, a.ptrs);
      whole->Exchange(t, b.ptrs);
      for (size_t k = 0; k < a.ptrs.size(); ++k) {
        const float* da = a.ptrs[k]->cpu_diff();
        const float* db = b.ptrs[k]->cpu_diff();
        ASSERT_TRUE(SameOnAllRanks(da, a.ptrs[k]->count())) << "blob " << k << " step " << t;
        for (int64_t i = 0; i < a.ptrs[k]->count(); ++i) {
          applied[k][i] += da[i];
          if (encoded) continue;
          if (n == 2) {
            ASSERT_EQ(da[i], db[i]) << "blob " << k << " step " << t << " element " << i;
          } else {
            ASSERT_NEAR(da[i], db[i], 1e-5f * (1 + std::fabs(db[i])))
                << "blob " << k << " step " << t << " element " << i;
          }
        }
      }
    }
    EXPECT_GT(overlapped->stats().total_seconds(ExchangeStats::WAIT), 0) << "no step ran in buckets";
    EXPECT_EQ(whole->stats().total_seconds(ExchangeStats::WAIT), 0);
    for (size_t k = 0; k < a.ptrs.size(); ++k) {
      vector<double> resid(residual->residual(k).begin(), residual->residual(k).end());
      const vector<double> total_local = SumOverRanks(local[k]);
      const vector<double> total_resid = SumOverRanks(resid);
      vector<double> lhs(a.ptrs[k]->count());
      for (int64_t i = 0; i < a.ptrs[k]->count(); ++i) lhs[i] = n * applied[k][i] + total_resid[i];
      ExpectConserved(lhs, total_local, kConservationTolerance, "blob " + std::to_string(k));
    }
  }
}

TEST(IwpExchangeTest, LeadersAgreeAndAreUniform) {
  auto exchange = CreateGradientExchange(MakeSync(SyncParameter::IWP), g_comm);
  FakeParams params;
  const int n = g_comm->size();
  vector<int> seen(n, 0);
  for (int t = 0; t < 40; ++t) {
    params.SetGradients(g_comm->rank(), t);
    exchange->Exchange(t, params.ptrs);
    const int leader = exchange->stats().last_step_blobs()[0].leader;
    ASSERT_GE(leader, 0);
    int root_leader = leader;
    g_comm->Broadcast(&root_leader, sizeof(int), 0);
    ASSERT_EQ(leader, root_leader);
    ++seen[leader];
  }
  for (int r = 0; r < n; ++r) EXPECT_GT(seen[r], 0) << "rank " << r << " never led in 40 steps";
  // The leader function over many steps: each rank within 5% of an equal share.
  vector<int> counts(n, 0);
  const int trials = 40000;
  for (int t = 0; t < trials; ++t) ++counts[LeaderFor(7, t, -1, n)];
  for (int r = 0; r < n; ++r) EXPECT_NEAR(counts[r], trials / n, 0.05 * trials / n) << "rank " << r;
}

TEST(IwpExchangeTest, DensityOneEqualsDense) {
  auto iwp = CreateGradientExchange(MakeSync(SyncParameter::IWP, "density: 1"), g_comm);
  auto dense = CreateGradientExchange(MakeSync(SyncParameter::DENSE), g_comm);
  FakeParams a, b;
  for (int t = 0; t < 5; ++t) {
    a.SetGradients(g_comm->rank(), t);
    b.SetGradients(g_comm->rank(), t);
    iwp->Exchange(t, a.ptrs);
    dense->Exchange(t, b.ptrs);
    for (size_t k = 0; k < a.ptrs.size(); ++k)
      for (int64_t i = 0; i < a.ptrs[k]->count(); ++i)
        ASSERT_NEAR(a.ptrs[k]->cpu_diff()[i], b.ptrs[k]->cpu_diff()[i], 1e-6) << k << " " << i;
  }
}

TEST(IwpExchangeTest, ExactModeSendsExactlyTheBudgetSampledStaysClose) {
  for (const string mode : {"EXACT", "SAMPLED"}) {
    auto exchange = CreateGradientExchange(
        MakeSync(SyncParameter::IWP,
                 "density: 0.2 max_dense_share: 1 iwp_param { threshold_mode: " + mode +
                     " sample_fraction: 0.2 }"),
        g_comm);
    FakeParams params;
    params.SetGradients(g_comm->rank(), 0);
    exchange->Exchange(0, params.ptrs);
    const auto& blobs = exchange->stats().last_step_blobs();
    // Budget: 20% of all 8740 elements, minus the two small blobs sent whole.
    const int64_t budget = std::llround(0.2 * 8740) - 740;
    const int64_t sparse_sent = blobs[0].sent + blobs[1].sent;
    if (mode == "EXACT") {
      EXPECT_EQ(sparse_sent, budget);
    } else {
      EXPECT_NEAR(static_cast<double>(sparse_sent), budget, 0.2 * budget);
    }
    EXPECT_EQ(blobs[2].sent, 40);
    EXPECT_EQ(blobs[3].sent, 700);
  }
}

// A NaN in one rank's gradient stops every rank with an error (never a hang, never
// a silent stall), whether that rank leads the step or not, for every sparse method.
TEST(ExchangeNonFiniteTest, OneRanksNaNIsAnErrorOnEveryRank) {
  const int n = g_comm->size();
  const int bad_rank = n - 1;
  const vector<std::pair<SyncParameter::Method, string>> methods = {
      {SyncParameter::IWP, ""},
      {SyncParameter::IWP, "iwp_param { leader: PER_LAYER }"},
      {SyncParameter::RANDOMK, ""},
      {SyncParameter::TOPK_ALLGATHER, ""},
      {SyncParameter::SCALECOM, ""},
      {SyncParameter::POWERSGD, ""},
      {SyncParameter::IWP, "value_encoding: FP16"},
      {SyncParameter::IWP, "value_encoding: INT8"},
      {SyncParameter::RANDOMK, "value_encoding: INT8"}};
  for (const auto& [method, extra] : methods) {
    // Once with the bad rank leading the step and once with another rank leading.
    for (int want_bad_leader : {1, 0}) {
      if (n == 1 && !want_bad_leader) continue;
      int t = 0;
      while ((LeaderFor(1, t, -1, n) == bad_rank) != static_cast<bool>(want_bad_leader)) ++t;
      auto exchange = CreateGradientExchange(MakeSync(method, extra), g_comm);
      exchange->Describe({{"a[0]", "b[0]", "c[0]", "d[0]"}});
      FakeParams params;
      params.SetGradients(g_comm->rank(), t);
      // A coordinate with a small gradient elsewhere: the leader would not pick it.
      if (g_comm->rank() == bad_rank) params.ptrs[1]->mutable_cpu_diff()[5] = std::nanf("");
      // Large values (the last blob travels whole) share an 8-bit block with the count
      // of non-finite ranks, which must still arrive.
      float* last = params.ptrs[3]->mutable_cpu_diff();
      for (int64_t i = params.ptrs[3]->count() - 10; i < params.ptrs[3]->count(); ++i) last[i] = 1000.f;
      string message;
      try {
        exchange->Exchange(t, params.ptrs);
      } catch (const Error& e) {
        message = e.what();
      }
      const bool failed = !message.empty();
      EXPECT_TRUE(failed) << method << " " << extra << ", bad leader " << want_bad_leader
                          << ", rank " << g_comm->rank();
      EXPECT_NE(message.find("not finite"), string::npos) << message;
      // Every rank must have failed: if one had not, it would be waiting here.
      EXPECT_FALSE(g_comm->AnyTrue(!failed));
    }
  }
}

// INT8 rounds a value to its block's step (the block's largest / 127): in a block
// with a value 10^6 times larger, the others arrive as zero, and the exchange counts
// them (they wait in the residuals). FP16 carries the same values whole.
TEST(ExchangeStatsTest, ValuesTheWireRoundsToZeroAreCounted) {
  for (const string encoding : {"FP32", "FP16", "INT8"}) {
    auto exchange = CreateGradientExchange(
        MakeSync(SyncParameter::RANDOMK, "value_encoding: " + encoding), g_comm);
    FakeParams params;
    params.SetGradients(g_comm->rank(), 0);
    // Every 8th value large, on every rank alike: whatever random-k picks, nearly
    // every block of 64 it sends holds a large value, and 7 in 8 values are small.
    for (Blob* blob : params.ptrs) {
      float* g = blob->mutable_cpu_diff();
      for (int64_t i = 0; i < blob->count(); ++i) g[i] = i % 8 == 0 ? 1000.f : 0.001f;
    }
    exchange->Exchange(0, params.ptrs);
    const int64_t zeros = exchange->stats().total_zero_arrivals();
    const int64_t sent = exchange->stats().total_sent();
    if (encoding == "INT8" && g_comm->size() > 1) {
      EXPECT_GE(zeros, 0.7 * sent) << "of " << sent;
      EXPECT_LE(zeros, 0.95 * sent);
      EXPECT_NE(exchange->Summary().find("arrived as 0"), string::npos) << exchange->Summary();
    } else {
      EXPECT_EQ(zeros, 0) << encoding;
      EXPECT_EQ(exchange->Summary().find("arrived as 0"), string::npos) << exchange->Summary();
    }
  }
}

// leader: EVERY_RANK: every rank's picks travel, their union fills the budget once
// the shares have learnt the ranks' overlap, and the bytes stay about one leader's.
TEST(IwpExchangeTest, EveryRankLeadsAShareAndTheUnionFillsTheBudget) {
  const int n = g_comm->size();
  auto every = CreateGradientExchange(
      MakeSync(SyncParameter::IWP, "iwp_param { leader: EVERY_RANK }"), g_comm);
  auto single = CreateGradientExchange(MakeSync(SyncParameter::IWP), g_comm);
  FakeParams a, b;
  int64_t every_bytes = 0, single_bytes = 0;
  for (int t = 0; t < 12; ++t) {
    a.SetGradients(g_comm->rank(), t);
    b.SetGradients(g_comm->rank(), t);
    // Half of the large blob's coordinates matter on every rank alike: the ranks'
    // picks overlap there, and the shares must grow to fill the budget anyway.
    for (FakeParams* p : {&a, &b}) {
      float* g = p->ptrs[0]->mutable_cpu_diff();
      for (int64_t i = 0; i < 5000; i += 40) g[i] = 30.f;
    }
    const int64_t before_every = every->stats().total_bytes();
    const int64_t before_single = single->stats().total_bytes();
    every->Exchange(t, a.ptrs);
    single->Exchange(t, b.ptrs);
    if (t < 4) continue;
    every_bytes += every->stats().total_bytes() - before_every;
    single_bytes += single->stats().total_bytes() - before_single;
    const auto& blobs = every->stats().last_step_blobs();
    const auto& reference = single->stats().last_step_blobs();
    int64_t sent = 0, budget = 0;
    for (size_t k = 0; k < blobs.size(); ++k) {
      sent += blobs[k].sent;
      budget += reference[k].sent;
    }
    EXPECT_NEAR(static_cast<double>(sent), budget, 0.1 * budget) << "step " << t;
  }
  // Every rank's message went out (rank 0 forwarded or sent N of them), and the
  // total stays within 40% of one leader's bytes (sparser sets cost a few more bits
  // per index).
  EXPECT_LT(every_bytes, 1.4 * single_bytes);
  EXPECT_GT(every_bytes, 0);
  (void)n;
}

// Bytes this rank sent per method, against the formulas of the conventions in
// include/caffe/sync/mpi_communicator.hpp.
TEST(ExchangeBytesTest, CountersMatchTheFormulas) {
  const int n = g_comm->size();
  const int me = g_comm->rank();
  const double ring = 2.0 * (n - 1) / n;
  FakeParams params;
  const int64_t total = 8740;
  auto within = [](double actual, double expected) { return std::fabs(actual - expected) <= 4.0 * 8; };
  {
    auto dense = CreateGradientExchange(MakeSync(SyncParameter::DENSE), g_comm);
    params.SetGradients(me, 0);
    dense->Exchange(0, params.ptrs);
    EXPECT_TRUE(within(dense->stats().total_bytes(), ring * 4 * total)) << dense->stats().total_bytes();
  }
  {
    auto randomk = CreateGradientExchange(MakeSync(SyncParameter::RANDOMK), g_comm);
    params.SetGradients(me, 0);
    randomk->Exchange(0, params.ptrs);
    const int64_t sent = randomk->stats().total_sent();
    EXPECT_TRUE(within(randomk->stats().total_bytes(), ring * 4 * sent)) << randomk->stats().total_bytes();
  }
  {
    auto topk = CreateGradientExchange(MakeSync(SyncParameter::TOPK_ALLGATHER), g_comm);
    params.SetGradients(me, 0);
    topk->Exchange(0, params.ptrs);
    const auto& blobs = topk->stats().last_step_blobs();
    const auto& dense_blobs = dynamic_cast<const ResidualExchange&>(*topk).dense_blobs();
    int64_t k = 0, dense = 0;
    for (size_t b = 0; b < blobs.size(); ++b) {
      if (dense_blobs[b]) {
        dense += blobs[b].elements;
      } else {
        k += blobs[b].sent;
      }
    }
    EXPECT_GT(dense, 0);
    const double expected = (n - 1) * 8.0 * k + ring * 4 * dense;
    EXPECT_TRUE(within(topk->stats().total_bytes(), expected)) << topk->stats().total_bytes() << " vs " << expected;
  }
  {
    auto iwp = CreateGradientExchange(MakeSync(SyncParameter::IWP), g_comm);
    params.SetGradients(me, 3);
    iwp->Exchange(3, params.ptrs);
    const auto& blobs = iwp->stats().last_step_blobs();
    const int leader = blobs[0].leader;
    const int64_t message = blobs[0].index_bytes + blobs[1].index_bytes;
    // The chain broadcast: every rank but the one before the root forwards the 8-byte
    // length and then the message.
    const bool forwards = me != (leader + n - 1) % n;
    const double expected = ring * 4 * iwp->stats().total_sent() + (forwards ? 8 + message : 0);
    EXPECT_TRUE(within(iwp->stats().total_bytes(), expected)) << iwp->stats().total_bytes() << " vs " << expected;
  }
  {
    // FP16 values: half the bytes of the same all-reduce.
    auto dense = CreateGradientExchange(MakeSync(SyncParameter::DENSE, "value_encoding: FP16"), g_comm);
    params.SetGradients(me, 0);
    dense->Exchange(0, params.ptrs);
    EXPECT_TRUE(within(dense->stats().total_bytes(), ring * 2 * total)) << dense->stats().total_bytes();
    auto randomk = CreateGradientExchange(MakeSync(SyncParameter::RANDOMK, "value_encoding: FP16"), g_comm);
    params.SetGradients(me, 0);
    randomk->Exchange(0, params.ptrs);
    EXPECT_TRUE(within(randomk->stats().total_bytes(), ring * 2 * randomk->stats().total_sent()))
        << randomk->stats().total_bytes();
    // INT8 values: a byte a value and a float per block of each piece the ring sends.
    auto randomk8 = CreateGradientExchange(MakeSync(SyncParameter::RANDOMK, "value_encoding: INT8"), g_comm);
    params.SetGradients(me, 0);
    randomk8->Exchange(0, params.ptrs);
    const int64_t values = randomk8->stats().total_sent() + 1;  // and the non-finite count
    EXPECT_EQ(randomk8->stats().total_bytes(), Int8RingBytes(values, n, me));
    EXPECT_LT(randomk8->stats().total_bytes(), 0.6 * ring * 2 * values);
    // TOPK_ALLGATHER: 2-byte values (padded to 4) and 4-byte indices per rank.
    auto topk = CreateGradientExchange(MakeSync(SyncParameter::TOPK_ALLGATHER, "value_encoding: FP16"), g_comm);
    params.SetGradients(me, 0);
    topk->Exchange(0, params.ptrs);
    int64_t k = 0, whole = 0;
    const auto& dense_blobs = dynamic_cast<const ResidualExchange&>(*topk).dense_blobs();
    for (size_t b = 0; b < topk->stats().last_step_blobs().size(); ++b) {
      const BlobSelection& blob = topk->stats().last_step_blobs()[b];
      if (dense_blobs[b]) {
        whole += blob.elements;
      } else {
        k += blob.sent;
      }
    }
    const double expected = (n - 1) * ((2 * k + 3) / 4 * 4 + 4.0 * k) + ring * 2 * whole;
    EXPECT_TRUE(within(topk->stats().total_bytes(), expected)) << topk->stats().total_bytes() << " vs " << expected;
  }
  {
    // SCALECOM: IWP's message and all-reduce, from the cyclic leader.
    auto scalecom = CreateGradientExchange(MakeSync(SyncParameter::SCALECOM), g_comm);
    params.SetGradients(me, 2);
    scalecom->Exchange(2, params.ptrs);
    const auto& blobs = scalecom->stats().last_step_blobs();
    const int leader = blobs[0].leader;
    EXPECT_EQ(leader, ScaleComExchange::LeaderAt(1, 2, n));
    int64_t message = 0;
    for (const BlobSelection& blob : blobs) message += blob.index_bytes;
    EXPECT_GT(message, 0);
    const bool forwards = me != (leader + n - 1) % n;
    const double expected = ring * 4 * scalecom->stats().total_sent() + (forwards ? 8 + message : 0);
    EXPECT_TRUE(within(scalecom->stats().total_bytes(), expected))
        << scalecom->stats().total_bytes() << " vs " << expected;
  }
}

// The half-precision ring: the same bits on every rank, every result a half, the
// roundings accounted for exactly (result + sum of the ranks' rounding errors = sum
// of the inputs), close to the float sum, half the bytes; values beyond half's range
// saturate and their excess is in the errors. Pieces smaller than a chunk included.
TEST(HalfPrecisionAllReduceTest, SumsInHalfAndAccountsForEveryRounding) {
  const int n = g_comm->size(), me = g_comm->rank();
  const int64_t original = g_comm->max_count_per_call();
  for (int64_t max_count : {original, int64_t{7}}) {
    g_comm->set_max_count_per_call(max_count);
    const int64_t count = 1001;
    vector<float> data(count), errors(count, 0.f);
    std::mt19937_64 rng(40 + me);
    std::normal_distribution<float> dist(0, 1);
    for (int64_t i = 0; i < count; ++i) data[i] = dist(rng) * (i % 10 == 0 ? 1e-4f : 1.f);
    data[3] = 50000.f;  // the sum over ranks leaves half's range
    data[4] = 1e-7f;    // a subnormal half
    const vector<float> input = data;
    const int64_t before = g_comm->stats().total_bytes_sent();
    g_comm->AllReduceSumHalf(data.data(), count, errors.data());
    EXPECT_EQ(g_comm->stats().total_bytes_sent() - before,
              MpiCommunicator::RingAllReduceBytesSent(count, n, me) / 2);
    ASSERT_TRUE(SameOnAllRanks(data.data(), count));
    vector<double> local(count), magnitude(count), error(count);
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(data[i], RoundToHalf(data[i])) << i;
      local[i] = input[i];
      magnitude[i] = std::fabs(input[i]);
      error[i] = errors[i];
    }
    const vector<double> sum = SumOverRanks(local), error_sum = SumOverRanks(error);
    const vector<double> bound = SumOverRanks(magnitude);
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_NEAR(data[i] + error_sum[i], sum[i], 1e-6 * std::max(1.0, bound[i])) << i;
      // N roundings (the partial sums and the result), each within half a spacing,
      // 2^-11 of a value at most the sum of the inputs' magnitudes (or a subnormal's).
      if (i != 3) {
        ASSERT_NEAR(data[i], sum[i], n * (std::ldexp(1.0, -11) * bound[i] + std::ldexp(1.0, -25))) << i;
      }
    }
    EXPECT_EQ(data[3], kLargestHalf);
  }
  g_comm->set_max_count_per_call(original);
}

// The 8-bit ring: the same bits on every rank, the roundings accounted for exactly
// (result + sum of the ranks' rounding errors = sum of the inputs), each result within
// the N roundings' half steps of the sum, and the bytes of its blocks. Pieces smaller
// than a chunk (and than a block) included.
TEST(Int8AllReduceTest, SumsInBlocksAndAccountsForEveryRounding) {
  const int n = g_comm->size(), me = g_comm->rank();
  const int64_t original = g_comm->max_count_per_call();
  for (int64_t max_count : {original, int64_t{7}, int64_t{100}}) {
    g_comm->set_max_count_per_call(max_count);
    const int64_t count = 1001;
    vector<float> data(count), errors(count, 0.f);
    std::mt19937_64 rng(50 + me);
    std::normal_distribution<float> dist(0, 1);
    for (int64_t i = 0; i < count; ++i) data[i] = dist(rng) * (i % 10 == 0 ? 1e-3f : 1.f);
    const vector<float> input = data;
    const int64_t before = g_comm->stats().total_bytes_sent();
    g_comm->AllReduceSumInt8(data.data(), count, errors.data());
    const int64_t sent = g_comm->stats().total_bytes_sent() - before;
    if (max_count == original) {
      EXPECT_EQ(sent, Int8RingBytes(count, n, me));
    }
    EXPECT_LT(sent, MpiCommunicator::RingAllReduceBytesSent(count, n, me) / 2);
    ASSERT_TRUE(SameOnAllRanks(data.data(), count));
    vector<double> local(count), magnitude(count), error(count);
    for (int64_t i = 0; i < count; ++i) {
      local[i] = input[i];
      magnitude[i] = std::fabs(input[i]);
      error[i] = errors[i];
    }
    const vector<double> sum = SumOverRanks(local), error_sum = SumOverRanks(error);
    double total_error = 0;
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_NEAR(data[i] + error_sum[i], sum[i], 1e-5 * std::max(1.0, magnitude[i] * n)) << i;
      total_error += std::fabs(error_sum[i]);
    }
    // Partial sums of normal values stay below about 4 sqrt(N): N roundings of at most
    // half a step of 1/127 of that each.
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_NEAR(data[i], sum[i], n * 0.5 * 4 * std::sqrt(n) * 2 / 127.0) << i;
    }
    EXPECT_GT(total_error, 0) << "8-bit values round";
  }
  g_comm->set_max_count_per_call(original);
}

// What a method keeps between steps (RANDOMK's residuals and ages, with its draw a
// function of the iteration; SCALECOM's filter besides; DENSE's FP16 carry) comes back
// from a snapshot: saving after step 3 and restoring into a fresh exchange replays
// steps 4-7 bit for bit.
TEST(ExchangeResumeTest, StateComesBackExactly) {
  for (const auto& [method, extra] : vector<std::pair<SyncParameter::Method, string>>{
           {SyncParameter::SCALECOM, ""},
           {SyncParameter::SCALECOM, "value_encoding: FP16 max_relative_step: 0.5"},
           {SyncParameter::RANDOMK, "value_encoding: INT8"},
           {SyncParameter::DENSE, "value_encoding: FP16"}}) {
    const SyncParameter sync = MakeSync(method, extra);
    auto first = CreateGradientExchange(sync, g_comm);
    FakeParams params;
    std::string state;
    vector<vector<float>> diffs;
    for (int t = 0; t < 8; ++t) {
      if (t == 4) state = first->SaveState();
      params.SetGradients(g_comm->rank(), t);
      first->set_learning_rate(1.f);
      first->Exchange(t, params.ptrs);
      if (t >= 4) {
        for (Blob* b : params.ptrs) diffs.emplace_back(b->cpu_diff(), b->cpu_diff() + b->count());
      }
    }
    EXPECT_FALSE(state.empty()) << extra;
    auto second = CreateGradientExchange(sync, g_comm);
    second->Describe({{}, {5000, 3000, 40, 700}});
    second->RestoreState(state);
    size_t at = 0;
    for (int t = 4; t < 8; ++t) {
      params.SetGradients(g_comm->rank(), t);
      second->set_learning_rate(1.f);
      second->Exchange(t, params.ptrs);
      for (Blob* b : params.ptrs) {
        ASSERT_EQ(0, std::memcmp(diffs[at++].data(), b->cpu_diff(), b->count() * sizeof(float)))
            << SyncParameter::Method_Name(method) << " " << extra << " step " << t;
      }
    }
  }
}

// SCALECOM's leader takes every rank in turn: N consecutive steps see every rank
// lead once, whatever the seed and the starting step, and the exchange follows it.
TEST(ScaleComExchangeTest, TheLeaderCyclesThroughEveryRank) {
  const int n = g_comm->size();
  for (uint64_t seed : {1ull, 7ull, 12345ull}) {
    for (int64_t start : {0, 5, 1001}) {
      vector<int> led(n, 0);
      for (int64_t t = start; t < start + n; ++t) {
        const int leader = ScaleComExchange::LeaderAt(seed, t, n);
        ASSERT_GE(leader, 0);
        ASSERT_LT(leader, n);
        ++led[leader];
        EXPECT_EQ(ScaleComExchange::LeaderAt(seed, t + 1, n), (leader + 1) % n);
      }
      for (int r = 0; r < n; ++r) EXPECT_EQ(led[r], 1) << "rank " << r << " seed " << seed;
    }
  }
  auto exchange = CreateGradientExchange(MakeSync(SyncParameter::SCALECOM, "seed: 3"), g_comm);
  FakeParams params;
  for (int t = 0; t < 2 * n; ++t) {
    params.SetGradients(g_comm->rank(), t);
    exchange->Exchange(t, params.ptrs);
    EXPECT_EQ(exchange->stats().last_step_blobs()[0].leader, ScaleComExchange::LeaderAt(3, t, n));
  }
}

// The leader picks each blob's top-k of its low-pass filtered residual
// f = (1 - beta) f + beta v, not of v: tracked here on every rank by hand, the sent
// coordinates are the leader's top-k of |f| at every step, f and v match the hand
// computation, and the two rankings differ at some step (else the case
// would prove nothing).
TEST(ScaleComExchangeTest, TheLeaderPicksTheTopOfItsFilteredResidual) {
  const int n_ranks = g_comm->size();
  const float beta = 0.3f;
  auto exchange = CreateGradientExchange(
      MakeSync(SyncParameter::SCALECOM,
               "seed: 2 density: 0.01 min_layer_size: 10 scalecom_param { beta: 0.3 }"),
      g_comm);
  const auto* scalecom = dynamic_cast<const ScaleComExchange*>(exchange.get());
  ASSERT_NE(scalecom, nullptr);
  const int64_t n = 3000, k = 30;
  Blob blob(vector<int64_t>{n});
  FillUniform(&blob, -1, 1, 9);
  vector<Blob*> params = {&blob};
  vector<float> v(n, 0.f), f(n, 0.f);
  bool rankings_differ = false;
  std::mt19937_64 rng(77 + g_comm->rank());
  std::normal_distribution<float> dist(0, 1);
  for (int t = 0; t < 20; ++t) {
    float* g = blob.mutable_cpu_diff();
    for (int64_t i = 0; i < n; ++i) g[i] = dist(rng) * (i % 7 == 0 ? 3.f : 1.f);
    vector<float> abs_v(n), abs_f(n);
    for (int64_t i = 0; i < n; ++i) {
      v[i] += g[i];
      f[i] = (1.f - beta) * f[i] + beta * v[i];
      abs_v[i] = std::fabs(v[i]);
      abs_f[i] = std::fabs(f[i]);
    }
    vector<int32_t> top_f = TopKIndices(abs_f.data(), n, k);
    vector<int32_t> top_v = TopKIndices(abs_v.data(), n, k);
    exchange->Exchange(t, params);
    const int leader = ScaleComExchange::LeaderAt(2, t, n_ranks);
    EXPECT_EQ(static_cast<int64_t>(top_f.size()), k);
    top_f.resize(k);  // the broadcasts below take k on every rank
    top_v.resize(k);
    g_comm->Broadcast(top_f.data(), k * sizeof(int32_t), leader);
    g_comm->Broadcast(top_v.data(), k * sizeof(int32_t), leader);
    vector<int32_t> sent;
    for (int64_t i = 0; i < n; ++i) {
      if (blob.cpu_diff()[i] != 0.f) sent.push_back(static_cast<int32_t>(i));
    }
    EXPECT_EQ(sent, top_f) << "step " << t;
    rankings_differ |= top_f != top_v;
    for (int32_t i : sent) v[i] = f[i] = 0.f;
    int64_t residual_off = 0, filter_off = 0;
    for (int64_t i = 0; i < n; ++i) {
      residual_off += scalecom->residual(0)[i] != v[i];
      // (The compiler may fuse the filter's multiply-add in one place and not the other.)
      filter_off += std::fabs(scalecom->filtered(0)[i] - f[i]) > 1e-5f * (1.f + std::fabs(f[i]));
    }
    EXPECT_EQ(residual_off, 0) << "step " << t << ": residual coordinates unlike the model's";
    EXPECT_EQ(filter_off, 0) << "step " << t << ": filter coordinates unlike the model's";
    // Every rank stops at the same step once any has failed: one that returned alone
    // would leave the others waiting in the next step's collectives.
    if (g_comm->AnyTrue(sent != top_f || residual_off > 0 || filter_off > 0)) return;
  }
  EXPECT_TRUE(rankings_differ);
}

// ---- training: N ranks with DENSE equal one rank with N times the batch ----

const int kImage = 6;
const int kRecords = 64;

// A tiny labelled image set; rank 0 writes it, all ranks read (same machine).
string TinyLmdb() {
  string path;
  if (g_comm->rank() == 0) {
    path = MakeTempDir("mpi_lmdb") + "/db";
    auto db = db::GetDB(DataParameter::LMDB);
    db->Open(path, db::OpenMode::NEW);
    auto txn = db->NewTransaction();
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> pixel(0, 255);
    for (int i = 0; i < kRecords; ++i) {
      Datum datum;
      datum.set_channels(1);
      datum.set_height(kImage);
      datum.set_width(kImage);
      datum.set_label(i % 10);
      string bytes(kImage * kImage, '\0');
      for (char& c : bytes) c = static_cast<char>(pixel(rng));
      datum.set_data(bytes);
      char key[16];
      std::snprintf(key, sizeof(key), "%08d", i);
      txn->Put(key, datum.SerializeAsString());
    }
    txn->Commit();
    db->Close();
  }
  int64_t length = static_cast<int64_t>(path.size());
  g_comm->Broadcast(&length, sizeof(length), 0);
  path.resize(length);
  g_comm->Broadcast(&path[0], length, 0);
  return path;
}

SolverParameter TrainingSolver(const string& source, int batch, const string& sync = "") {
  SolverParameter param = ParseSolver(
      "base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' max_iter: 20 "
      "display: 0 random_seed: 11 snapshot_after_train: false " + sync);
  *param.mutable_net_param() = ParseNet(R"(
    layer { name: 'data' type: 'Data' top: 'data' top: 'label'
            transform_param { scale: 0.00390625 }
            data_param { source: 'SOURCE' batch_size: 1 backend: LMDB } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
    layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 10 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' })");
  auto* data = param.mutable_net_param()->mutable_layer(0)->mutable_data_param();
  data->set_source(source);
  data->set_batch_size(batch);
  return param;
}

TEST(DataParallelTest, DenseOnNRanksEqualsOneRankWithNTimesTheBatch) {
  const int n = g_comm->size();
  const int batch = 4;
  const string source = TinyLmdb();

  // The data-parallel run: rank r reads records r, r+N, ...
  auto context = std::make_shared<Context>();
  context->set_rank(g_comm->rank(), n);
  auto parallel = SolverRegistry::CreateSolver(TrainingSolver(source, batch), context);
  std::shared_ptr<GradientExchange> exchange = CreateGradientExchange(SyncParameter(), g_comm);
  parallel->set_gradient_exchange(exchange);
  exchange->BroadcastInitialWeights(parallel->net()->learnable_params());

  // The reference, in every process: one rank reading every record, N x the batch.
  auto alone = SolverRegistry::CreateSolver(TrainingSolver(source, n * batch),
                                            std::make_shared<Context>());
  for (size_t p = 0; p < alone->net()->learnable_params().size(); ++p) {
    alone->net()->learnable_params()[p]->CopyFrom(*parallel->net()->learnable_params()[p]);
  }
  parallel->Step(20);
  alone->Step(20);

  double max_rel = 0;
  for (size_t p = 0; p < alone->net()->learnable_params().size(); ++p) {
    const Blob& a = *alone->net()->learnable_params()[p];
    const Blob& b = *parallel->net()->learnable_params()[p];
    ASSERT_TRUE(SameOnAllRanks(b.cpu_data(), b.count())) << "param " << p;
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < a.count(); ++i) {
      diff += std::pow(double(a.cpu_data()[i]) - b.cpu_data()[i], 2);
      norm += std::pow(double(a.cpu_data()[i]), 2);
    }
    max_rel = std::max(max_rel, std::sqrt(diff / std::max(norm, 1e-30)));
  }
  EXPECT_LT(max_rel, 1e-5);
}

// Only rank 0 runs the test nets. A stop request it sees in the middle of its test
// pass must stop every rank at that iteration: a rank that went on alone would wait
// in the next collective for ever.
TEST(DataParallelTest, StopDuringRankZerosTestPassStopsEveryRank) {
  const int n = g_comm->size();
  auto context = std::make_shared<Context>();
  context->set_rank(g_comm->rank(), n);
  auto solver = SolverRegistry::CreateSolver(
      TrainingSolver(TinyLmdb(), 4, "test_iter: 4 test_interval: 5 test_initialization: false"), context);
  solver->set_gradient_exchange(CreateGradientExchange(SyncParameter(), g_comm));
  // The action function is asked once per training iteration and once per test
  // iteration: calls 1-5 are iterations 0-4, call 7 is the second test batch at
  // iteration 5. Rank 0 alone gets the request, as from a signal sent to it.
  int calls = 0;
  const bool root = g_comm->rank() == 0;
  solver->set_action_function([&calls, root] {
    return root && ++calls == 7 ? SolverAction::STOP : SolverAction::NONE;
  });
  solver->Step(20);
  EXPECT_EQ(solver->iter(), 5);
  int64_t iter = solver->iter();
  vector<int64_t> every(n);
  g_comm->AllGatherBytes(&iter, sizeof(iter), every.data());
  for (int r = 0; r < n; ++r) EXPECT_EQ(every[r], 5) << "rank " << r;
}

// DENSE starts a bucket's all-reduce as soon as backward has produced it. Started
// early or all after backward, the buckets and their sums are the same, so the
// weights must agree bitwise; and with small buckets some must start early.
TEST(DataParallelTest, DenseStartedDuringBackwardEqualsDenseAfterBackward) {
  const int n = g_comm->size();
  const string source = TinyLmdb();
  auto make = [&](bool report_backward) {
    auto context = std::make_shared<Context>();
    context->set_rank(g_comm->rank(), n);
    auto solver = SolverRegistry::CreateSolver(
        TrainingSolver(source, 4, "sync_param { bucket_size_mb: 0.00005 }"), context);
    std::shared_ptr<GradientExchange> exchange =
        CreateGradientExchange(solver->param().sync_param(), g_comm);
    solver->set_gradient_exchange(exchange);
    if (!report_backward) solver->net()->set_backward_observer(nullptr);
    exchange->BroadcastInitialWeights(solver->net()->learnable_params());
    return std::make_pair(solver, exchange);
  };
  auto early = make(true);
  auto late = make(false);
  early.first->Step(6);
  late.first->Step(6);
  const auto* dense = dynamic_cast<const DenseExchange*>(early.second.get());
  ASSERT_NE(dense, nullptr);
  EXPECT_GT(dense->plan().buckets().size(), 2u);
  EXPECT_GT(dense->buckets_started_early(), 0);
  EXPECT_EQ(dynamic_cast<const DenseExchange*>(late.second.get())->buckets_started_early(), 0);
  for (size_t p = 0; p < early.first->net()->learnable_params().size(); ++p) {
    const Blob& a = *early.first->net()->learnable_params()[p];
    const Blob& b = *late.first->net()->learnable_params()[p];
    ASSERT_TRUE(SameOnAllRanks(a.cpu_data(), a.count())) << "param " << p;
    for (int64_t i = 0; i < a.count(); ++i) {
      ASSERT_EQ(a.cpu_data()[i], b.cpu_data()[i]) << "param " << p << " element " << i;
    }
  }
}

// BatchNorm's running statistics differ between ranks (each sees its own data);
// they never travel with the gradients, and every rank holds their mean after a
// snapshot, which the test pass and the saved model then use.
TEST(DataParallelTest, BatchNormStatisticsAreLeftOutAndAveragedAtSnapshots) {
  const int n = g_comm->size();
  string dir = g_comm->rank() == 0 ? MakeTempDir("mpi_bn") : string();
  int64_t length = static_cast<int64_t>(dir.size());
  g_comm->Broadcast(&length, sizeof(length), 0);
  dir.resize(length);
  g_comm->Broadcast(&dir[0], length, 0);
  SolverParameter param = ParseSolver(
      "base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' max_iter: 10 display: 0 "
      "snapshot_after_train: false random_seed: 5 "
      "sync_param { method: IWP density: 0.2 min_layer_size: 10 }");
  param.set_snapshot_prefix(dir + "/bn");
  *param.mutable_net_param() = ParseNet(R"(
    layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
            dummy_data_param { shape { dim: 8 dim: 2 dim: 5 dim: 5 } shape { dim: 8 dim: 3 }
                               data_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
            convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c' }
    layer { name: 'scale' type: 'Scale' bottom: 'c' top: 'c' scale_param { bias_term: true } }
    layer { name: 'frozen' type: 'InnerProduct' bottom: 'c' top: 'h'
            param { lr_mult: 0 } param { lr_mult: 0 }
            inner_product_param { num_output: 6 weight_filler { type: 'xavier' } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'h' top: 'p'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' })");
  auto context = std::make_shared<Context>();
  context->set_rank(g_comm->rank(), n);
  auto solver = SolverRegistry::CreateSolver(param, context);
  std::shared_ptr<GradientExchange> exchange = CreateGradientExchange(param.sync_param(), g_comm);
  solver->set_gradient_exchange(exchange);
  exchange->BroadcastInitialWeights(solver->net()->learnable_params());
  solver->Step(3);
  // Exchanged: conv (2), scale (2), ip (2); not the BatchNorm statistics (3) or the
  // frozen layer (2).
  const auto& blobs = exchange->stats().last_step_blobs();
  vector<string> names;
  for (const auto& b : blobs) names.push_back(b.name);
  EXPECT_EQ(names, (vector<string>{"conv[0]", "conv[1]", "scale[0]", "scale[1]", "ip[0]", "ip[1]"}));
  Net& net = *solver->net();
  Blob* mean = net.layer_by_name("bn")->blobs()[0].get();
  Blob* variance = net.layer_by_name("bn")->blobs()[1].get();
  vector<double> local_mean(mean->cpu_data(), mean->cpu_data() + mean->count());
  if (n > 1) {
    EXPECT_FALSE(SameOnAllRanks(mean->cpu_data(), mean->count())) << "each rank saw its own data";
  }
  const vector<double> summed = SumOverRanks(local_mean);
  const int64_t bytes_before = exchange->stats().total_bytes();
  solver->Snapshot();
  EXPECT_TRUE(SameOnAllRanks(mean->cpu_data(), mean->count()));
  EXPECT_TRUE(SameOnAllRanks(variance->cpu_data(), variance->count()));
  for (int64_t c = 0; c < mean->count(); ++c) {
    EXPECT_NEAR(mean->cpu_data()[c], summed[c] / n, 1e-5 * std::max(1.0, std::fabs(summed[c])));
  }
  if (n > 1) {
    EXPECT_GT(exchange->stats().total_bytes(), bytes_before) << "the averaging is counted";
  }
  // The frozen layer never moved and still agrees everywhere.
  Blob* frozen = net.layer_by_name("frozen")->blobs()[0].get();
  EXPECT_TRUE(SameOnAllRanks(frozen->cpu_data(), frozen->count()));
  EXPECT_EQ(frozen->asum_diff(), 0.0) << "lr_mult 0: no gradient is computed";
}

// `extra` goes into sync_param, `iwp_extra` into its iwp_param.
void IwpTrainingResumesExactly(const string& extra, const string& iwp_extra);

TEST(DataParallelTest, IwpTrainingKeepsRanksIdenticalAndResumesExactly) {
  // The last two train without momentum correction, so their steps run in buckets
  // during backward (IwpBucketsTest); the state saved between steps is the same.
  const std::pair<string, string> cases[] = {
      {"", ""},
      {"", "leader: PER_LAYER score: MAGNITUDE"},
      {"", "leader: EVERY_RANK"},
      {"momentum_correction: false", "leader: EVERY_RANK"},
      {"value_encoding: FP16 max_relative_step: 0.5 momentum_correction: false",
       "leader: PER_LAYER"}};
  for (const auto& [extra, iwp_extra] : cases) {
    SCOPED_TRACE(extra + " / " + iwp_extra);
    IwpTrainingResumesExactly(extra, iwp_extra);
  }
}

void IwpTrainingResumesExactly(const string& extra, const string& iwp_extra) {
  const string prefix = [] {
    string dir = g_comm->rank() == 0 ? MakeTempDir("mpi_resume") : string();
    int64_t length = static_cast<int64_t>(dir.size());
    g_comm->Broadcast(&length, sizeof(length), 0);
    dir.resize(length);
    g_comm->Broadcast(&dir[0], length, 0);
    return dir + "/iwp";
  }();
  // DummyData input drawn from the (restored) random stream: resume must be exact.
  auto make = [&](uint64_t seed) {
    SolverParameter param = ParseSolver(
        "base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' max_iter: 10 display: 0 "
        "snapshot_after_train: false "
        "weight_decay: 0.01 "
        "sync_param { method: IWP density: 0.1 min_layer_size: 50 warmup_iter: 2 " +
        string(extra.find("momentum_correction") == string::npos ? "momentum_correction: true "
                                                                 : "") +
        "iwp_param { stochastic_fraction: 0.2 " + iwp_extra + " } " + extra + " }");
    param.set_random_seed(seed);
    param.set_snapshot_prefix(prefix);
    *param.mutable_net_param() = ParseNet(R"(
      layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
              dummy_data_param { shape { dim: 4 dim: 12 } shape { dim: 4 dim: 3 }
                                 data_filler { type: 'gaussian' std: 1 } } }
      layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h'
              inner_product_param { num_output: 16 weight_filler { type: 'xavier' } } }
      layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
      layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'p'
              inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
      layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' })");
    auto context = std::make_shared<Context>();
    context->set_rank(g_comm->rank(), g_comm->size());
    auto solver = SolverRegistry::CreateSolver(param, context);
    std::shared_ptr<GradientExchange> exchange = CreateGradientExchange(param.sync_param(), g_comm);
    solver->set_gradient_exchange(exchange);
    exchange->BroadcastInitialWeights(solver->net()->learnable_params());
    return solver;
  };
  auto straight = make(3);
  for (int t = 0; t < 10; ++t) {
    straight->Step(1);
    for (Blob* p : straight->net()->learnable_params()) {
      ASSERT_TRUE(SameOnAllRanks(p->cpu_data(), p->count())) << "step " << t;
    }
  }
  auto first = make(3);
  first->Step(5);
  first->Snapshot();
  g_comm->Barrier();  // rank 0 writes the model and state; every rank its sync state
  auto resumed = make(77);  // a different init, overwritten by the restore
  resumed->Restore(prefix + "_iter_5.solverstate");
  resumed->Step(5);
  for (size_t p = 0; p < straight->net()->learnable_params().size(); ++p) {
    const Blob& a = *straight->net()->learnable_params()[p];
    const Blob& b = *resumed->net()->learnable_params()[p];
    for (int64_t i = 0; i < a.count(); ++i) {
      ASSERT_EQ(a.cpu_data()[i], b.cpu_data()[i]) << "param " << p << " element " << i;
    }
  }
}

}  // namespace
}  // namespace caffe
