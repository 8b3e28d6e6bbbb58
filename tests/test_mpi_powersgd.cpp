// PowerSGD on real MPI ranks (ctest runs this under mpirun -np 2 and -np 4): nothing
// is lost through its error feedback, every rank applies the same bits, a summed
// gradient of rank r travels exactly at rank r, blobs too small to gain go dense and
// then equal DENSE, the bytes follow the formula, FP16 factors lose nothing and halve
// them, resume is exact (Q and residuals), and the orthonormalization holds on
// ill-conditioned input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "caffe/exchanges/powersgd_exchange.hpp"
#include "caffe/sync/mpi_communicator.hpp"
#include "caffe/util/io.hpp"
#include "mpi_test_support.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

using mpi_test::g_comm;
using mpi_test::SameOnAllRanks;
using mpi_test::SumOverRanks;

// A convolution's weights (compressible at rank 2), an inner product's (compressible)
// and a bias (always dense).
struct MatrixParams {
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> ptrs;
  MatrixParams() {
    const vector<vector<int64_t>> shapes = {{16, 3, 5, 5}, {40, 60}, {40}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      blobs.push_back(std::make_unique<Blob>(shapes[i]));
      FillUniform(blobs.back().get(), -1, 1, 300 + i);
      ptrs.push_back(blobs.back().get());
    }
  }
  void SetGradients(int rank, int step, float scale = 1) {
    std::mt19937_64 rng(1000 * rank + step);
    std::normal_distribution<float> dist(0, scale);
    for (Blob* b : ptrs) {
      float* g = b->mutable_cpu_diff();
      for (int64_t i = 0; i < b->count(); ++i) g[i] = dist(rng);
    }
  }
};

SyncParameter PowerSgd(int rank, const string& extra = "") {
  SyncParameter p;
  ParseProtoFromText(extra, "<sync>", &p);
  p.set_method(SyncParameter::POWERSGD);
  p.mutable_powersgd_param()->set_rank(rank);
  return p;
}

// Largest |E^T E - I| over the first `kept` columns of a rows x cols matrix.
double OrthonormalityError(const vector<float>& e, int64_t rows, int64_t cols, int kept) {
  double worst = 0;
  for (int a = 0; a < kept; ++a) {
    for (int b = 0; b < kept; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(e[i * cols + a]) * e[i * cols + b];
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  }
  return worst;
}

TEST(PowerSgdTest, OrthonormalizeHoldsOnIllConditionedColumns) {
  const int64_t rows = 200, cols = 5;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> dist(0, 1);
  vector<double> x(rows), y(rows), z(rows);
  for (int64_t i = 0; i < rows; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
    z[i] = dist(rng);
  }
  // Columns 1 and 2 differ from column 0 by 1e-3 of its norm; column 3 is twice
  // column 0 (dependent), column 4 is 0.
  vector<float> m(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    m[i * cols + 0] = static_cast<float>(x[i]);
    m[i * cols + 1] = static_cast<float>(x[i] + 1e-3 * y[i]);
    m[i * cols + 2] = static_cast<float>(x[i] + 1e-3 * y[i] + 1e-3 * z[i]);
    m[i * cols + 3] = static_cast<float>(2 * x[i]);
    m[i * cols + 4] = 0.f;
  }
  const vector<float> original = m;
  EXPECT_EQ(PowerSgdExchange::Orthonormalize(m.data(), rows, cols), 3);
  EXPECT_LT(OrthonormalityError(m, rows, cols, 3), 1e-5);
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_EQ(m[i * cols + 3], 0.f);
    EXPECT_EQ(m[i * cols + 4], 0.f);
  }
  // The kept columns span the original ones: each is its own projection.
  for (int c = 0; c < 3; ++c) {
    double residual = 0, norm = 0;
    vector<double> projection(rows, 0);
    for (int e = 0; e < 3; ++e) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(m[i * cols + e]) * original[i * cols + c];
      for (int64_t i = 0; i < rows; ++i) projection[i] += dot * m[i * cols + e];
    }
    for (int64_t i = 0; i < rows; ++i) {
      residual += std::pow(projection[i] - original[i * cols + c], 2);
      norm += std::pow(original[i * cols + c], 2);
    }
    EXPECT_LT(std::sqrt(residual), 1e-5 * std::sqrt(norm)) << "column " << c;
  }
  // A Vandermonde matrix (condition number about 1e6 in float).
  const int64_t vrows = 60, vcols = 6;
  vector<float> v(vrows * vcols);
  for (int64_t i = 0; i < vrows; ++i) {
    for (int64_t j = 0; j < vcols; ++j) v[i * vcols + j] = static_cast<float>(std::pow(i / double(vrows), j));
  }
  const int kept = PowerSgdExchange::Orthonormalize(v.data(), vrows, vcols);
  EXPECT_EQ(kept, vcols);
  EXPECT_LT(OrthonormalityError(v, vrows, vcols, kept), 1e-5);
}

TEST(PowerSgdTest, PlansWhichBlobsAreCompressed) {
  EXPECT_TRUE(PowerSgdExchange::Compressible(40, 60, 2));    // 200 < 2400
  EXPECT_FALSE(PowerSgdExchange::Compressible(40, 60, 24));  // 2400 >= 2400
  EXPECT_FALSE(PowerSgdExchange::Compressible(40, 1, 1));    // a bias
  Blob conv(vector<int64_t>{16, 3, 5, 5});
  int64_t rows = 0, cols = 0;
  PowerSgdExchange::MatrixShape(conv, &rows, &cols);
  EXPECT_EQ(rows, 16);
  EXPECT_EQ(cols, 75);
}

// N x (sum of applied) + (sum of residuals) = (sum of local gradients), at every
// coordinate, and the applied gradient is the same bits on every rank.
TEST(PowerSgdTest, ConservesThroughErrorFeedbackAndAppliesTheSameGradientEverywhere) {
  for (const string extra : {"", "warmup_iter: 2 clip_norm: 30 seed: 5"}) {
    auto exchange = CreateGradientExchange(PowerSgd(2, extra), g_comm);
    auto* powersgd = dynamic_cast<PowerSgdExchange*>(exchange.get());
    ASSERT_NE(powersgd, nullptr);
    MatrixParams params;
    const int n = g_comm->size();
    const SyncParameter sync = PowerSgd(2, extra);
    vector<vector<double>> applied(3), local(3);
    for (size_t b = 0; b < 3; ++b) {
      applied[b].assign(params.ptrs[b]->count(), 0);
      local[b].assign(params.ptrs[b]->count(), 0);
    }
    for (int t = 0; t < 12; ++t) {
      params.SetGradients(g_comm->rank(), t);
      for (size_t b = 0; b < 3; ++b) {
        const float* g = params.ptrs[b]->cpu_diff();
        const int64_t count = params.ptrs[b]->count();
        double scale = 1;
        if (sync.clip_norm() > 0) {
          double squares = 0;
          for (int64_t i = 0; i < count; ++i) squares += double(g[i]) * g[i];
          const double limit = sync.clip_norm() / std::sqrt(double(n));
          if (std::sqrt(squares) > limit) scale = limit / std::sqrt(squares);
        }
        for (int64_t i = 0; i < count; ++i) local[b][i] += scale * g[i];
      }
      exchange->Exchange(t, params.ptrs);
      for (size_t b = 0; b < 3; ++b) {
        ASSERT_TRUE(SameOnAllRanks(params.ptrs[b]->cpu_diff(), params.ptrs[b]->count()))
            << "blob " << b << " step " << t;
        for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) applied[b][i] += params.ptrs[b]->cpu_diff()[i];
      }
    }
    EXPECT_EQ(powersgd->dense_blobs(), (vector<bool>{false, false, true}));
    for (size_t b = 0; b < 3; ++b) {
      vector<double> resid(powersgd->residual(b).begin(), powersgd->residual(b).end());
      const vector<double> total_local = SumOverRanks(local[b]);
      const vector<double> total_resid = SumOverRanks(resid);
      double held = 0;
      for (int64_t i = 0; i < params.ptrs[b]->count(); ++i) {
        ASSERT_NEAR(n * applied[b][i] + total_resid[i], total_local[i],
                    2e-4 * std::max(1.0, std::fabs(total_local[i])))
            << extra << " blob " << b << " coordinate " << i;
        held += std::fabs(resid[i]);
      }
      // The compressed blobs really held something back; the dense one nothing.
      if (b < 2) {
        EXPECT_GT(held, 0) << "blob " << b;
      } else {
        EXPECT_EQ(held, 0) << "blob " << b;
      }
    }
  }
}

// value_encoding: FP16 beside FP32 on the same gradients, of a real net's size (P must
// not fall below half's range). The wire's roundings are all accounted for, so
// nothing is lost to float accuracy (half's would be ~1e-3); every rank applies the
// same bits; the result moves by about half's precision; and every all-reduce (P, Q,
// the dense buffer) sends half the bytes.
TEST(PowerSgdTest, Fp16FactorsConserveAndHalveTheBytes) {
  const SyncParameter half = PowerSgd(2, "value_encoding: FP16");
  EXPECT_NO_THROW(ValidateSyncParameter(half, "solver.prototxt"));
  auto fp16 = CreateGradientExchange(half, g_comm);
  auto fp32 = CreateGradientExchange(PowerSgd(2), g_comm);
  const int n = g_comm->size();
  const float scale = 1e-4f;
  MatrixParams params16, params32;
  vector<vector<double>> applied(3), local(3);
  for (size_t b = 0; b < 3; ++b) {
    applied[b].assign(params16.ptrs[b]->count(), 0);
    local[b].assign(params16.ptrs[b]->count(), 0);
  }
  double moved = 0, norm = 0;
  for (int t = 0; t < 10; ++t) {
    params16.SetGradients(g_comm->rank(), t, scale);
    params32.SetGradients(g_comm->rank(), t, scale);
    for (size_t b = 0; b < 3; ++b) {
      const float* g = params16.ptrs[b]->cpu_diff();
      for (int64_t i = 0; i < params16.ptrs[b]->count(); ++i) local[b][i] += g[i];
    }
    fp16->Exchange(t, params16.ptrs);
    fp32->Exchange(t, params32.ptrs);
    for (size_t b = 0; b < 3; ++b) {
      const float* d16 = params16.ptrs[b]->cpu_diff();
      const float* d32 = params32.ptrs[b]->cpu_diff();
      ASSERT_TRUE(SameOnAllRanks(d16, params16.ptrs[b]->count())) << "blob " << b << " step " << t;
      for (int64_t i = 0; i < params16.ptrs[b]->count(); ++i) {
        applied[b][i] += d16[i];
        moved += std::pow(double(d16[i]) - d32[i], 2);
        norm += std::pow(double(d32[i]), 2);
      }
    }
  }
  const auto& powersgd = dynamic_cast<PowerSgdExchange&>(*fp16);
  for (size_t b = 0; b < 3; ++b) {
    vector<double> resid(powersgd.residual(b).begin(), powersgd.residual(b).end());
    const vector<double> total_local = SumOverRanks(local[b]);
    const vector<double> total_resid = SumOverRanks(resid);
    for (int64_t i = 0; i < params16.ptrs[b]->count(); ++i) {
      ASSERT_NEAR(n * applied[b][i] + total_resid[i], total_local[i],
                  2e-5 * std::max<double>(scale, std::fabs(total_local[i])))
          << "blob " << b << " coordinate " << i;
    }
  }
  const double relative = std::sqrt(moved / norm);
  EXPECT_GT(relative, 0) << "FP16 left the applied gradient as FP32's";
  EXPECT_LT(relative, 1e-2);
  EXPECT_EQ(fp16->stats().total_sent(), fp32->stats().total_sent());
  EXPECT_EQ(2 * fp16->stats().total_bytes(), fp32->stats().total_bytes());
}

// Each rank's gradient u v_r^T shares u: the sum is rank 1, so rank-1 PowerSGD
// applies exactly the mean in one step and the ranks together keep nothing.
TEST(PowerSgdTest, ARankOneSumTravelsExactly) {
  auto exchange = CreateGradientExchange(PowerSgd(1), g_comm);
  auto* powersgd = dynamic_cast<PowerSgdExchange*>(exchange.get());
  const int n = g_comm->size();
  const int64_t rows = 40, cols = 60;
  Blob blob(vector<int64_t>{rows, cols});
  FillUniform(&blob, -1, 1, 5);
  vector<float> u(rows), mean(rows * cols, 0.f);
  std::mt19937_64 shared(8);
  std::normal_distribution<float> dist(0, 1);
  for (float& x : u) x = dist(shared);
  for (int r = 0; r < n; ++r) {
    std::mt19937_64 rng(100 + r);
    vector<float> v(cols);
    for (float& x : v) x = dist(rng);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        mean[i * cols + j] += u[i] * v[j] / n;
        if (r == g_comm->rank()) blob.mutable_cpu_diff()[i * cols + j] = u[i] * v[j];
      }
    }
  }
  vector<Blob*> params = {&blob};
  exchange->Exchange(0, params);
  ASSERT_FALSE(powersgd->dense_blobs()[0]);
  double scale = 0;
  for (float x : mean) scale = std::max(scale, double(std::fabs(x)));
  // Each rank keeps its own gradient less the mean; together they keep nothing.
  vector<double> resid(powersgd->residual(0).begin(), powersgd->residual(0).end());
  const vector<double> resid_sum = SumOverRanks(resid);
  for (int64_t i = 0; i < rows * cols; ++i) {
    ASSERT_NEAR(blob.cpu_diff()[i], mean[i], 1e-5 * scale) << i;
    ASSERT_NEAR(resid_sum[i], 0.0, 1e-5 * scale * n) << i;
  }
}

// At a rank where factors would not be smaller, every blob goes dense: the step is
// DENSE's (to float rounding: the two sum in differently cut ring chunks).
TEST(PowerSgdTest, FullRankIsDense) {
  auto powersgd = CreateGradientExchange(PowerSgd(40), g_comm);
  SyncParameter dense_param;
  dense_param.set_method(SyncParameter::DENSE);
  auto dense = CreateGradientExchange(dense_param, g_comm);
  MatrixParams a, b;
  a.SetGradients(g_comm->rank(), 4);
  b.SetGradients(g_comm->rank(), 4);
  powersgd->Exchange(4, a.ptrs);
  dense->Exchange(4, b.ptrs);
  // Every blob is still reported (the -sync_stats CSV has a row for each).
  ASSERT_EQ(powersgd->stats().last_step_blobs().size(), 3u);
  for (size_t blob = 0; blob < 3; ++blob) {
    EXPECT_EQ(powersgd->stats().last_step_blobs()[blob].sent, a.ptrs[blob]->count());
    EXPECT_TRUE(dynamic_cast<PowerSgdExchange&>(*powersgd).dense_blobs()[blob]);
    for (int64_t i = 0; i < a.ptrs[blob]->count(); ++i) {
      ASSERT_NEAR(a.ptrs[blob]->cpu_diff()[i], b.ptrs[blob]->cpu_diff()[i], 1e-6f) << blob << " " << i;
    }
  }
}

// Bytes per step: one ring all-reduce of the dense blobs (and the health flag), one
// of all P factors and one of all Q factors, whatever N is.
TEST(PowerSgdTest, BytesFollowTheFormula) {
  const int n = g_comm->size(), me = g_comm->rank();
  auto exchange = CreateGradientExchange(PowerSgd(2), g_comm);
  MatrixParams params;
  params.SetGradients(me, 0);
  exchange->Exchange(0, params.ptrs);
  const int64_t dense = 40, p = 2 * (16 + 40), q = 2 * (75 + 60);
  const int64_t expected = MpiCommunicator::RingAllReduceBytesSent(dense + 1, n, me) +
                           MpiCommunicator::RingAllReduceBytesSent(p, n, me) +
                           MpiCommunicator::RingAllReduceBytesSent(q, n, me);
  EXPECT_EQ(exchange->stats().total_bytes(), expected);
  EXPECT_EQ(exchange->stats().total_sent(), dense + p + q);
}

// Saving after step 3 and restoring into a fresh exchange replays steps 4-7 bit for
// bit: Q (the warm start) and the residuals come back.
TEST(PowerSgdTest, ResumeIsExact) {
  auto first = CreateGradientExchange(PowerSgd(2), g_comm);
  MatrixParams params;
  std::string state;
  vector<vector<float>> diffs;
  for (int t = 0; t < 8; ++t) {
    if (t == 4) state = first->SaveState();
    params.SetGradients(g_comm->rank(), t);
    first->Exchange(t, params.ptrs);
    if (t >= 4) {
      for (Blob* b : params.ptrs) diffs.emplace_back(b->cpu_diff(), b->cpu_diff() + b->count());
    }
  }
  auto second = CreateGradientExchange(PowerSgd(2), g_comm);
  second->Describe({{}, {1200, 2400, 40}});
  second->RestoreState(state);
  size_t at = 0;
  for (int t = 4; t < 8; ++t) {
    params.SetGradients(g_comm->rank(), t);
    second->Exchange(t, params.ptrs);
    for (Blob* b : params.ptrs) {
      ASSERT_EQ(0, std::memcmp(diffs[at++].data(), b->cpu_diff(), b->count() * sizeof(float)))
          << "step " << t;
    }
  }
  const auto& a = dynamic_cast<PowerSgdExchange&>(*first);
  const auto& b = dynamic_cast<PowerSgdExchange&>(*second);
  for (size_t blob = 0; blob < 3; ++blob) {
    EXPECT_EQ(a.residual(blob), b.residual(blob));
    EXPECT_EQ(a.q(blob), b.q(blob));
  }
  // A state saved at another rank is caught with a clear error.
  auto other = CreateGradientExchange(PowerSgd(3), g_comm);
  other->RestoreState(state);
  params.SetGradients(g_comm->rank(), 4);
  try {
    other->Exchange(4, params.ptrs);
    ADD_FAILURE() << "a Q of rank 2 was taken for rank 3";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("powersgd_param.rank"), string::npos) << e.what();
  }
}

// The sparse methods' coordinate settings are ignored (one solver file serves every
// method): the solver keeps its momentum and no step rates are asked for. A rank
// below 1 is refused.
TEST(PowerSgdTest, CoordinateSettingsAreIgnoredAndTheRankIsChecked) {
  for (const string extra : {"momentum_correction: true", "max_relative_step: 0.1"}) {
    SyncParameter p = PowerSgd(1, extra);
    EXPECT_NO_THROW(ValidateSyncParameter(p, "solver.prototxt")) << extra;
    auto exchange = CreateGradientExchange(p, g_comm);
    EXPECT_FALSE(exchange->TakeOverMomentum(0.9f)) << extra;
    EXPECT_FALSE(exchange->wants_learning_rate()) << extra;
  }
  try {
    ValidateSyncParameter(PowerSgd(0), "solver.prototxt");
    ADD_FAILURE() << "rank 0";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("solver.prototxt: sync_param.powersgd_param.rank"),
              string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace caffe
