#include "caffe/sync/gradient_exchange.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/util/upgrade_proto.hpp"

namespace caffe {

namespace {

// A per-method setting left flat in sync_param would be ignored without a word (the
// methods read their sub-messages): refuse it. Solvers read from files are upgraded
// before they are checked or built (UpgradeSyncParameter); `where` ends in "sync_param.".
void RejectFlatMethodFields(const SyncParameter& param, const std::string& where) {
  const std::string flat = FlatMethodFieldsSet(param);
  CAFFE_REQUIRE(flat.empty()) << where << flat << " belong(s) in its method's sub-message "
                              << "(iwp_param, powersgd_param, scalecom_param; "
                              << "UpgradeSyncParameter moves them)";
}

}  // namespace

GradientExchange::GradientExchange(const SyncParameter& param, Transport transport)
    : param_(param), comm_(std::move(transport.host)), device_comm_(std::move(transport.device)) {
  RejectFlatMethodFields(param_, "sync_param.");
}

void GradientExchange::BroadcastInitialWeights(const vector<Blob*>& params) {
  if (comm_->size() == 1) return;
  Communicator* comm = blobs_.gpu && device_comm_ ? device_comm_.get() : comm_.get();
  for (Blob* p : params) {
    if (p->count() == 0) continue;
    float* data = comm->memory() == BufferMemory::DEVICE ? p->mutable_gpu_data()
                                                         : p->mutable_cpu_data();
    comm->Broadcast(data, p->count() * static_cast<int64_t>(sizeof(float)), 0);
  }
  // Start the byte accounting after the one-time weight broadcast.
  comm_->mutable_stats().Clear();
  if (device_comm_) device_comm_->mutable_stats().Clear();
}

void GradientExchange::AverageOverRanks(const vector<Blob*>& blobs) {
  const int n = comm_->size();
  if (n == 1) return;
  int64_t total = 0;
  for (const Blob* b : blobs) total += b->count();
  vector<float> values;
  values.reserve(total);
  for (const Blob* b : blobs) values.insert(values.end(), b->cpu_data(), b->cpu_data() + b->count());
  const int64_t before = BytesSentSoFar();
  if (total > 0) comm_->AllReduceSum(values.data(), total);
  stats_.AddSideBytes(BytesSentSoFar() - before);
  const float inv = 1.f / n;
  int64_t pos = 0;
  for (Blob* b : blobs) {
    float* data = b->mutable_cpu_data();
    for (int64_t i = 0; i < b->count(); ++i) data[i] = values[pos++] * inv;
  }
}

SolverAction GradientExchange::AgreeOnAction(SolverAction local) {
  if (comm_->size() == 1) return local;
  // One small all-reduce carries both requests; STOP wins over SNAPSHOT.
  float flags[2] = {local == SolverAction::STOP ? 1.f : 0.f,
                    local == SolverAction::SNAPSHOT ? 1.f : 0.f};
  const int64_t before = comm_->stats().total_bytes_sent();
  const auto start = std::chrono::steady_clock::now();
  comm_->AllReduceSum(flags, 2);
  stats_.AddTime(ExchangeStats::CONTROL,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  // Control traffic is not gradient traffic: keep it out of the exchange's accounting.
  auto& entry = comm_->mutable_stats().by_op["allreduce"];
  entry.bytes_sent -= comm_->stats().total_bytes_sent() - before;
  if (flags[0] > 0) return SolverAction::STOP;
  if (flags[1] > 0) return SolverAction::SNAPSHOT;
  return SolverAction::NONE;
}

double GradientExchange::DenseRingBytes(int64_t elements) const {
  const int n = comm_->size();
  return n > 1 ? 2.0 * (n - 1) / n * 4.0 * static_cast<double>(elements) : 0.0;
}

std::string GradientExchange::Summary() const {
  const ExchangeStats& s = stats_;
  if (s.window_steps() == 0) return {};
  const double steps = static_cast<double>(s.window_steps());
  char line[512];
  const double nominal = s.window_sent() > 0
                             ? static_cast<double>(s.window_elements()) / s.window_sent()
                             : 0.0;
  const double wire = s.window_bytes() > 0 ? s.window_dense_bytes() / s.window_bytes() : 0.0;
  auto ms = [&](ExchangeStats::Phase phase) { return 1e3 * s.window_seconds(phase) / steps; };
  std::snprintf(line, sizeof(line),
                "method %s, density %.6g, nominal ratio %.1fx, wire ratio %.1fx, "
                "bytes/step %.0f, accumulate %.2f ms, select %.2f ms, broadcast %.2f ms, "
                "gather %.2f ms, allreduce %.2f ms, ",
                method_name(), s.last_density(), nominal, wire, s.window_bytes() / steps,
                ms(ExchangeStats::ACCUMULATE), ms(ExchangeStats::SELECT),
                ms(ExchangeStats::BROADCAST), ms(ExchangeStats::GATHER),
                ms(ExchangeStats::ALLREDUCE));
  std::string out = line;
  if (s.window_seconds(ExchangeStats::ALLGATHER) > 0) {
    std::snprintf(line, sizeof(line), "allgather %.2f ms, ", ms(ExchangeStats::ALLGATHER));
    out += line;
  }
  std::snprintf(line, sizeof(line), "scatter %.2f ms", ms(ExchangeStats::SCATTER));
  out += line;
  if (s.window_seconds(ExchangeStats::WAIT) > 0) {
    std::snprintf(line, sizeof(line), ", waited %.2f ms", ms(ExchangeStats::WAIT));
    out += line;
  }
  if (s.window_seconds(ExchangeStats::CONTROL) > 0) {
    std::snprintf(line, sizeof(line), ", control %.2f ms", ms(ExchangeStats::CONTROL));
    out += line;
  }
  int64_t max_age = 0;
  double mean_age = 0;
  CurrentAge(&max_age, &mean_age);
  if (max_age > 0) {
    std::snprintf(line, sizeof(line), ", age max %lld mean %.1f", static_cast<long long>(max_age),
                  mean_age);
    out += line;
  }
  if (s.window_capped() > 0) {
    std::snprintf(line, sizeof(line), ", rate-limited %.1f/step", s.window_capped() / steps);
    out += line;
  }
  if (s.window_zero_arrivals() > 0 && s.window_sent() > 0) {
    std::snprintf(line, sizeof(line), ", arrived as 0 %.2f%%",
                  100.0 * s.window_zero_arrivals() / s.window_sent());
    out += line;
  }
  return out;
}

void ValidateSyncParameter(const SyncParameter& p, const std::string& source) {
  const std::string where = (source.empty() ? std::string("solver") : source) + ": sync_param.";
  CAFFE_REQUIRE(SyncParameter::Method_IsValid(p.method()))
      << where << "method " << static_cast<int>(p.method()) << " is unknown";
  RejectFlatMethodFields(p, where);
  CAFFE_REQUIRE(p.density() > 0 && p.density() <= 1)
      << where << "density must lie in (0, 1], found " << p.density();
  for (float d : p.density_schedule()) {
    CAFFE_REQUIRE(d > 0 && d <= 1) << where << "density_schedule values must lie in (0, 1], found " << d;
  }
  CAFFE_REQUIRE(p.warmup_iter() >= 0) << where << "warmup_iter must not be negative";
  CAFFE_REQUIRE(p.density_schedule_iter() > 0) << where << "density_schedule_iter must be positive";
  CAFFE_REQUIRE(p.bucket_size_mb() > 0) << where << "bucket_size_mb must be positive";
  CAFFE_REQUIRE(p.clip_norm() >= 0) << where << "clip_norm must not be negative";
  CAFFE_REQUIRE(p.max_relative_step() >= 0)
      << where << "max_relative_step must not be negative, found " << p.max_relative_step();
  CAFFE_REQUIRE(p.max_dense_share() >= 0 && p.max_dense_share() <= 1)
      << where << "max_dense_share must lie in [0, 1], found " << p.max_dense_share();
  CAFFE_REQUIRE(p.min_layer_size() >= 0) << where << "min_layer_size must not be negative";
  // Block-scaled bytes round small values to zero against their block's largest: only
  // the methods whose residuals keep what a rounding removes may use them.
  const bool keeps_residuals = p.method() == SyncParameter::IWP ||
                               p.method() == SyncParameter::FIXED_THRESHOLD ||
                               p.method() == SyncParameter::RANDOMK ||
                               p.method() == SyncParameter::SCALECOM;
  CAFFE_REQUIRE(p.value_encoding() != SyncParameter::INT8 || keeps_residuals)
      << where << "value_encoding: INT8 applies to methods IWP, FIXED_THRESHOLD, RANDOMK and "
      << "SCALECOM; method " << SyncParameter::Method_Name(p.method()) << " takes FP32 or FP16";
  // Each method checks its own sub-message only: the others' are ignored, so that one
  // solver file can carry every method's settings and `method` alone picks.
  switch (p.method()) {
    case SyncParameter::IWP:
    case SyncParameter::FIXED_THRESHOLD: {
      const IwpParameter& iwp = p.iwp_param();
      const std::string at = where + "iwp_param.";
      // epsilon 0 would make a zero weight's importance infinite (or NaN for a zero
      // residual), which no threshold can rank.
      CAFFE_REQUIRE(iwp.epsilon() > 0 && std::isfinite(iwp.epsilon()))
          << at << "epsilon must be > 0, found " << iwp.epsilon();
      CAFFE_REQUIRE(iwp.stochastic_fraction() >= 0 && iwp.stochastic_fraction() < 1)
          << at << "stochastic_fraction must lie in [0, 1), found " << iwp.stochastic_fraction();
      CAFFE_REQUIRE(iwp.leader() == IwpParameter::PER_STEP || iwp.layer_wise() ||
                    p.method() != SyncParameter::IWP)
          << at << "leader: " << IwpParameter::Leader_Name(iwp.leader())
          << " needs layer_wise: true (its budget split is made on every rank, by blob)";
      CAFFE_REQUIRE(iwp.sample_fraction() > 0 && iwp.sample_fraction() <= 1)
          << at << "sample_fraction must lie in (0, 1], found " << iwp.sample_fraction();
      break;
    }
    case SyncParameter::POWERSGD:
      CAFFE_REQUIRE(p.powersgd_param().rank() >= 1)
          << where << "powersgd_param.rank must be at least 1, found " << p.powersgd_param().rank();
      break;
    case SyncParameter::SCALECOM:
      CAFFE_REQUIRE(p.scalecom_param().beta() > 0 && p.scalecom_param().beta() <= 1)
          << where << "scalecom_param.beta must lie in (0, 1], found " << p.scalecom_param().beta();
      break;
    case SyncParameter::DENSE:
    case SyncParameter::TOPK_ALLGATHER:
    case SyncParameter::RANDOMK:
      break;
  }
}

std::unique_ptr<GradientExchange> CreateGradientExchange(const SyncParameter& param,
                                                         std::shared_ptr<Communicator> host) {
  return CreateGradientExchange(param, Transport(std::move(host)));
}

std::unique_ptr<GradientExchange> CreateGradientExchange(const SyncParameter& param,
                                                         Transport transport) {
  return ExchangeRegistry::Create(param, std::move(transport));
}

}  // namespace caffe
