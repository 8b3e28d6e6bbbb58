#include "caffe/exchanges/powersgd_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/shared_random.hpp"
#include "caffe/sync/state_codec.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

SyncParameter WithoutCoordinateSettings(SyncParameter param) {
  param.clear_momentum_correction();
  param.clear_max_relative_step();
  return param;
}

}  // namespace

PowerSgdExchange::PowerSgdExchange(const SyncParameter& param, Transport transport)
    : ResidualExchange(WithoutCoordinateSettings(param), std::move(transport)) {
  if ((param.momentum_correction() || param.max_relative_step() > 0) && comm_->rank() == 0) {
    LOG(INFO) << "POWERSGD ignores sync_param.momentum_correction and max_relative_step "
              << "(they act on single coordinates, which a low-rank exchange does not send)";
  }
}

namespace {

// Separates the streams Q is drawn from.
constexpr uint64_t kQSalt = 0x9051dull;

}  // namespace

void PowerSgdExchange::MatrixShape(const Blob& blob, int64_t* rows, int64_t* cols) {
  *rows = blob.num_axes() > 0 ? blob.shape(0) : 1;
  *cols = *rows > 0 ? blob.count() / *rows : 0;
}

bool PowerSgdExchange::Compressible(int64_t rows, int64_t cols, int rank) {
  return rank > 0 && rows > 1 && cols > 1 && rank * (rows + cols) < rows * cols;
}

int PowerSgdExchange::Orthonormalize(float* matrix, int64_t rows, int64_t cols) {
  vector<vector<double>> basis;
  vector<double> x(rows);
  int kept = 0;
  for (int64_t j = 0; j < cols; ++j) {
    double original = 0;
    for (int64_t i = 0; i < rows; ++i) {
      x[i] = matrix[i * cols + j];
      original += x[i] * x[i];
    }
    original = std::sqrt(original);
    // Twice: the second pass removes what rounding left of the first's projections.
    for (int pass = 0; pass < 2; ++pass) {
      for (const vector<double>& e : basis) {
        double dot = 0;
        for (int64_t i = 0; i < rows; ++i) dot += e[i] * x[i];
        for (int64_t i = 0; i < rows; ++i) x[i] -= dot * e[i];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += x[i] * x[i];
    norm = std::sqrt(norm);
    const bool independent = std::isfinite(norm) && norm > 1e-30 && norm > 1e-6 * original;
    if (independent) {
      for (int64_t i = 0; i < rows; ++i) x[i] /= norm;
      basis.push_back(x);
      ++kept;
    }
    for (int64_t i = 0; i < rows; ++i) {
      matrix[i * cols + j] = independent ? static_cast<float>(x[i]) : 0.f;
    }
  }
  return kept;
}

int PowerSgdExchange::RankFor(size_t b) const {
  return static_cast<int>(
      std::min<int64_t>(param_.powersgd_param().rank(), std::min(rows_[b], cols_[b])));
}

void PowerSgdExchange::DrawColumn(size_t b, int64_t cols, int rank, int j) {
  // Standard normal entries (Box-Muller on the shared uniforms), as in the paper.
  const uint64_t stream = SharedHash(param_.seed(), current_iter(), static_cast<int64_t>(b),
                                     kQSalt + static_cast<uint64_t>(j));
  float* q = q_[b].data();
  for (int64_t i = 0; i < cols; ++i) {
    // u1 in (0, 1): the log stays finite.
    const double u1 = CoordinateUniform(stream, 2 * i) + 0.5 / 16777216.0;
    const double u2 = CoordinateUniform(stream, 2 * i + 1);
    q[i * rank + j] =
        static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }
}

void PowerSgdExchange::PlanBudget(const vector<Blob*>& params) {
  const size_t m = params.size();
  rows_.assign(m, 0);
  cols_.assign(m, 0);
  if (q_.size() != m) q_.resize(m);
  vector<bool> dense(m, true);
  int64_t total = 0, dense_elements = 0, factors = 0;
  std::ostringstream compressed;
  for (size_t b = 0; b < m; ++b) {
    MatrixShape(*params[b], &rows_[b], &cols_[b]);
    total += params[b]->count();
    dense[b] = !Compressible(rows_[b], cols_[b], param_.powersgd_param().rank());
    if (dense[b]) {
      dense_elements += params[b]->count();
      continue;
    }
    const int r = RankFor(b);
    factors += r * (rows_[b] + cols_[b]);
    compressed << " " << BlobName(b) << " " << rows_[b] << "x" << cols_[b] << "->"
               << r * (rows_[b] + cols_[b]);
  }
  set_dense_blobs(dense);
  if (comm_->rank() != 0) return;
  const int64_t per_step = dense_elements + factors;
  LOG(INFO) << "sync plan (POWERSGD): rank " << param_.powersgd_param().rank() << "; " << per_step
            << " of " << total << " values per step ("
            << (per_step > 0 ? double(total) / per_step : 0.0)
            << "x fewer); dense: " << dense_elements << " elements in one buffer; factors:"
            << (factors > 0 ? compressed.str() : std::string(" none"));
}

int64_t PowerSgdExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float /*density*/) {
  const size_t m = params.size();
  const float inv = 1.f / comm_->size();

  // The dense blobs in one all-reduce (with the residuals' health flag); the diffs of
  // the compressed ones are written below.
  vector<Selection> selections(m);
  for (size_t b = 0; b < m; ++b) selections[b].all = IsDenseBlob(b);
  int64_t sent = ReduceSelected(params, selections);

  auto start = std::chrono::steady_clock::now();
  vector<size_t> compressed;
  vector<int64_t> p_at, q_at;
  int64_t p_total = 0, q_total = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) continue;
    compressed.push_back(b);
    p_at.push_back(p_total);
    q_at.push_back(q_total);
    const int r = RankFor(b);
    p_total += rows_[b] * r;
    q_total += cols_[b] * r;
  }
  auto record_blobs = [&]() {
    for (size_t b = 0; b < m; ++b) {
      BlobSelection s;
      s.name = BlobName(b);
      s.elements = params[b]->count();
      s.sent = IsDenseBlob(b) ? s.elements : RankFor(b) * (rows_[b] + cols_[b]);
      stats_.AddBlob(s);
    }
  };
  if (compressed.empty()) {
    record_blobs();
    return sent;
  }
  p_all_.resize(p_total);
  q_all_.resize(q_total);
  // P = M Q with the last step's Q.
  for (size_t j = 0; j < compressed.size(); ++j) {
    const size_t b = compressed[j];
    const int r = RankFor(b);
    if (q_[b].empty()) {
      q_[b].assign(cols_[b] * r, 0.f);
      for (int c = 0; c < r; ++c) DrawColumn(b, cols_[b], r, c);
    }
    CAFFE_REQUIRE(static_cast<int64_t>(q_[b].size()) == cols_[b] * r)
        << "sync state (POWERSGD): blob '" << BlobName(b) << "' holds a Q of " << q_[b].size()
        << " values, rank " << r << " needs " << cols_[b] * r
        << " (saved with another powersgd_param.rank?)";
    math::gemm(math::NoTrans, math::NoTrans, rows_[b], r, cols_[b], 1.f, ResidualData(b),
               q_[b].data(), 0.f, p_all_.data() + p_at[j]);
  }
  stats_.AddTime(ExchangeStats::SELECT, PhaseSecondsSince(start));

  // Sums every rank's factors; one that is not finite (the sums are the same
  // everywhere) stops every rank alike, naming the blob. With FP16 the wire's
  // roundings need no bookkeeping: every rank works on the same rounded sums, P's
  // only tilt the basis, and Q's are in the P Q^T / N that every rank applies and
  // takes off its residual, so the residuals hold them.
  const bool half = param_.value_encoding() == SyncParameter::FP16 && comm_->size() > 1;
  auto sum_factors = [&](vector<float>* factors, const vector<int64_t>& at, const char* what) {
    const auto reduce_start = std::chrono::steady_clock::now();
    if (half) {
      factor_rounding_.assign(factors->size(), 0.f);
      comm_->AllReduceSumHalf(factors->data(), static_cast<int64_t>(factors->size()),
                              factor_rounding_.data());
    } else {
      AllReduceSum(factors->data(), static_cast<int64_t>(factors->size()));
    }
    stats_.AddTime(ExchangeStats::ALLREDUCE, PhaseSecondsSince(reduce_start));
    const vector<float>& values = *factors;
    for (size_t j = 0; j < compressed.size(); ++j) {
      const int64_t end =
          j + 1 < compressed.size() ? at[j + 1] : static_cast<int64_t>(values.size());
      for (int64_t i = at[j]; i < end; ++i) {
        if (std::isfinite(values[i])) continue;
        ErrorBuilder() << "sync (POWERSGD): iteration " << iter << ": the summed factor " << what
                       << " of blob '" << BlobName(compressed[j]) << "' is not finite (NaN or Inf "
                       << "reached the exchange on some rank; lower base_lr, or set "
                       << "clip_gradients or sync_param.clip_norm)";
      }
    }
  };
  sum_factors(&p_all_, p_at, "P");

  // Q = M^T P with P orthonormalized (the same on every rank: it was summed).
  start = std::chrono::steady_clock::now();
  for (size_t j = 0; j < compressed.size(); ++j) {
    const size_t b = compressed[j];
    const int r = RankFor(b);
    float* p = p_all_.data() + p_at[j];
    Orthonormalize(p, rows_[b], r);
    math::gemm(math::Trans, math::NoTrans, cols_[b], r, rows_[b], 1.f, ResidualData(b), p, 0.f,
               q_all_.data() + q_at[j]);
  }
  stats_.AddTime(ExchangeStats::SELECT, PhaseSecondsSince(start));
  sum_factors(&q_all_, q_at, "Q");

  // The applied gradient P Q^T / N; what it missed stays in v.
  start = std::chrono::steady_clock::now();
  for (size_t j = 0; j < compressed.size(); ++j) {
    const size_t b = compressed[j];
    const int r = RankFor(b);
    const float* p = p_all_.data() + p_at[j];
    const float* q = q_all_.data() + q_at[j];
    // Straight into the diff, which the host kernels then take off v.
    float* applied = params[b]->mutable_cpu_diff();
    math::gemm(math::NoTrans, math::Trans, rows_[b], cols_[b], r, inv, p, q, 0.f, applied);
    residual_kernels().Subtract(b, applied);
    // The next step starts from this Q, its columns scaled to unit norm: P once
    // orthonormalized does not depend on their scale, and P = M Q then has the
    // gradient's size, not its square (with FP16, gradients of 1e-4 would make P fall
    // below half precision's range). A column that came out 0 (nothing left in its
    // direction) is drawn afresh, or the power iteration could not leave 0.
    std::copy(q, q + cols_[b] * r, q_[b].begin());
    float* kept = q_[b].data();
    for (int c = 0; c < r; ++c) {
      double squares = 0;
      for (int64_t i = 0; i < cols_[b]; ++i) squares += double(kept[i * r + c]) * kept[i * r + c];
      if (squares == 0) {
        DrawColumn(b, cols_[b], r, c);
        continue;
      }
      const float scale = static_cast<float>(1 / std::sqrt(squares));
      for (int64_t i = 0; i < cols_[b]; ++i) kept[i * r + c] *= scale;
    }
  }
  stats_.AddTime(ExchangeStats::SCATTER, PhaseSecondsSince(start));
  record_blobs();
  return sent + p_total + q_total;
}

std::string PowerSgdExchange::SaveMethodState() const {
  std::string out;
  AppendFloatArrays(q_, &out);
  return out;
}

void PowerSgdExchange::RestoreMethodState(const std::string& state) {
  q_.clear();
  if (state.empty()) return;
  size_t pos = 0;
  q_ = ReadFloatArrays(state, &pos, "sync state: POWERSGD section");
  CAFFE_REQUIRE(pos == state.size()) << "sync state: POWERSGD section has trailing bytes";
}

REGISTER_EXCHANGE(POWERSGD, PowerSgdExchange);

}  // namespace caffe
