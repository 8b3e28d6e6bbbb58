#include "caffe/sync/residual_exchange.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "caffe/sync/shared_random.hpp"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

namespace {
double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
// The saved state: version 1 holds residuals and velocities; version 2 adds every
// coordinate's last-sent iteration and known importance.
constexpr uint32_t kStateMagicV1 = 0x49575052;
constexpr uint32_t kStateMagicV2 = 0x32505749;
// Separates the stochastic update's stream from the leader's and the samples'.
constexpr uint64_t kStochasticSalt = 0x5a1e5ull;
}  // namespace

bool ResidualExchange::TakeOverMomentum(float momentum) {
  solver_momentum_ = momentum;
  if (!param_.momentum_correction()) return false;
  momentum_ = momentum;
  momentum_correction_ = true;
  return true;
}

float ResidualExchange::DensityAt(int iter) const {
  if (iter < param_.warmup_iter()) return 1.f;
  const int after = iter - param_.warmup_iter();
  const int stage = after / param_.density_schedule_iter();
  if (stage < param_.density_schedule_size()) return param_.density_schedule(stage);
  return param_.density();
}

void ResidualExchange::EnsureState(const vector<Blob*>& params) {
  if (!state_decided_) {
    // The solver sets GPU mode before the first step; from then on the state stays
    // on one side.
#ifdef USE_CUDA
    on_device_ = gpu_mode_ && SupportsDeviceResiduals() && HasCudaDevice();
#endif
    state_decided_ = true;
  }
  if (dense_blob_.empty()) PlanBudget(params);
  CAFFE_REQUIRE(dense_blob_.size() == params.size())
      << "the exchange was planned for " << dense_blob_.size() << " blobs, this step has "
      << params.size();
  if (!residual_.empty()) {
    // Restored state (or a previous step) must describe exactly these blobs.
    CAFFE_REQUIRE(residual_.size() == params.size())
        << "sync state holds " << residual_.size() << " blobs, the net has " << params.size();
    for (size_t b = 0; b < params.size(); ++b) {
      CAFFE_REQUIRE(static_cast<int64_t>(residual_[b].size()) == params[b]->count())
          << "sync state blob " << b << " holds " << residual_[b].size() << " values, the net's has "
          << params[b]->count();
    }
  } else {
    for (Blob* p : params) {
      residual_.emplace_back(p->count(), 0.f);
      velocity_.emplace_back(momentum_correction_ ? p->count() : 0, 0.f);
    }
  }
  if (last_sent_.empty()) {
    // A fresh start (or a state saved before ages were kept): nothing has waited yet.
    for (Blob* p : params) last_sent_.emplace_back(p->count(), current_iter_ - 1);
  }
  if (!track_known_importance_) {
    known_importance_.clear();
  } else if (known_importance_.empty()) {
    for (Blob* p : params) known_importance_.emplace_back(p->count(), 0.f);
  }
  CAFFE_REQUIRE(!on_device_ || !param_.measure_capture())
      << "sync_param.measure_capture works on host residuals: run it in CPU mode";
#ifdef USE_CUDA
  if (on_device_ && (device_behind_ || device_residual_.size() != residual_.size())) UploadState();
#endif
}

void ResidualExchange::PlanBudget(const vector<Blob*>& params) {
  const size_t m = params.size();
  auto name = [&](size_t b) { return b < param_names_.size() ? param_names_[b] : std::to_string(b); };
  int64_t total = 0, dense = 0;
  dense_blob_.assign(m, false);
  for (size_t b = 0; b < m; ++b) {
    total += params[b]->count();
    if (params[b]->count() < param_.min_layer_size()) {
      dense_blob_[b] = true;
      dense += params[b]->count();
    }
  }
  // Small blobs (biases, BatchNorm's scale and shift) travel whole because their few
  // elements matter and cost little, but only while they leave most of the budget to
  // the large blobs: beyond max_dense_share the largest of them are selected like the
  // rest (ResNet-20 at 1/64 has more small-blob elements than the whole budget).
  const double budget = static_cast<double>(param_.density()) * total;
  const double limit = param_.max_dense_share() * budget;
  vector<size_t> sparsified;
  while (dense > limit) {
    size_t largest = m;
    for (size_t b = 0; b < m; ++b) {
      if (dense_blob_[b] && (largest == m || params[b]->count() > params[largest]->count())) largest = b;
    }
    if (largest == m) break;
    dense_blob_[largest] = false;
    dense -= params[largest]->count();
    sparsified.push_back(largest);
  }
  int64_t sparse = 0, sparse_blobs = 0, dense_blobs = 0;
  for (size_t b = 0; b < m; ++b) {
    if (dense_blob_[b]) {
      ++dense_blobs;
    } else {
      sparse += params[b]->count();
      ++sparse_blobs;
    }
  }
  if (param_.density() >= 1.f || comm_->rank() != 0) return;
  std::ostringstream line;
  const double sparse_density = sparse > 0 ? std::max(0.0, budget - dense) / sparse : 0.0;
  line << "sync budget (" << method_name() << "): density " << param_.density() << " of " << total
       << " elements = " << std::llround(budget) << " per step; sent whole: " << dense
       << " elements in " << dense_blobs << " blob(s) (" << (budget > 0 ? 100.0 * dense / budget : 0)
       << "% of the budget, max_dense_share " << param_.max_dense_share() << "); sparse: "
       << sparse_blobs << " blob(s) at density " << sparse_density << " on average:";
  for (size_t b = 0; b < m; ++b) {
    if (dense_blob_[b]) continue;
    line << " " << name(b) << " " << params[b]->count() << "->"
         << std::llround(sparse_density * params[b]->count());
  }
  LOG(INFO) << line.str();
  if (!sparsified.empty()) {
    std::ostringstream names;
    for (size_t b : sparsified) names << " " << name(b) << " (" << params[b]->count() << ")";
    LOG(INFO) << "sync budget: sparsified although under min_layer_size "
              << param_.min_layer_size() << ", so that the blobs sent whole fit in "
              << param_.max_dense_share() << " of the budget:" << names.str();
  }
  if (sparse_blobs > 0 && budget - dense < sparse_blobs) {
    LOG(WARNING) << "sync budget: " << std::llround(budget - dense) << " element(s) left for "
                 << sparse_blobs << " sparse blob(s); each still sends at least one, so the step "
                 << "sends more than density " << param_.density();
  }
}

float ResidualExchange::LocalClipNorm() const {
  return param_.clip_norm() > 0 ? param_.clip_norm() / std::sqrt(static_cast<float>(comm_->size()))
                                : 0.f;
}

const float* ResidualExchange::ResidualData(size_t b) const {
#ifdef USE_CUDA
  if (on_device_) return device_residual_[b].as<float>();
#endif
  return residual_[b].data();
}

void ResidualExchange::SyncHostMirror() const {
#ifdef USE_CUDA
  if (!host_behind_) return;
  for (size_t b = 0; b < residual_.size(); ++b) {
    device_residual_[b].Download(residual_[b].data(), residual_[b].size() * sizeof(float));
    // Only momentum correction keeps u on the device (UploadState); a restored state
    // may still hold host velocities that the device never got.
    if (momentum_correction_) {
      device_velocity_[b].Download(velocity_[b].data(), velocity_[b].size() * sizeof(float));
    }
    device_last_sent_[b].Download(last_sent_[b].data(), last_sent_[b].size() * sizeof(int32_t));
    if (!known_importance_.empty()) {
      device_known_importance_[b].Download(known_importance_[b].data(),
                                           known_importance_[b].size() * sizeof(float));
    }
  }
  host_behind_ = false;
#endif
}

void ResidualExchange::ClipAndAccumulate(const vector<Blob*>& params) {
#ifdef USE_CUDA
  if (on_device_) {
    ClipAndAccumulateOnDevice(params);
    return;
  }
#endif
  const float clip = LocalClipNorm();
  nonfinite_blob_ = -1;
  for (size_t b = 0; b < params.size(); ++b) {
    Blob* p = params[b];
    const int64_t n = p->count();
    float* g = p->mutable_cpu_diff();
    if (clip > 0) {
      // Local clipping per blob: keeps one rank's outlier gradient from dominating
      // the residual it will carry for many steps.
      const float norm = std::sqrt(math::dot(n, g, g));
      if (norm > clip) math::scal(n, clip / norm, g);
    }
    float* v = residual_[b].data();
    // Elementwise, so the result does not depend on how threads split the range:
    // every rank gets the same bits. The finiteness test rides along: a NaN that
    // stays in this rank's residual must stop every rank, not wait unsent forever.
    std::atomic<bool> finite{true};
    if (momentum_correction_) {
      float* u = velocity_[b].data();
      const float momentum = momentum_;
      ParallelFor(n, [=, &finite](int64_t begin, int64_t end) {
        bool ok = true;
        for (int64_t i = begin; i < end; ++i) {
          u[i] = momentum * u[i] + g[i];
          v[i] += u[i];
          ok &= std::isfinite(v[i]);
        }
        if (!ok) finite = false;
      });
    } else {
      ParallelFor(n, [=, &finite](int64_t begin, int64_t end) {
        bool ok = true;
        for (int64_t i = begin; i < end; ++i) {
          v[i] += g[i];
          ok &= std::isfinite(v[i]);
        }
        if (!ok) finite = false;
      });
    }
    if (!finite && nonfinite_blob_ < 0) nonfinite_blob_ = static_cast<int>(b);
  }
}

void ResidualExchange::CheckResidualsFinite(float ranks_not_finite) const {
  if (!(ranks_not_finite > 0)) return;
  const std::string here =
      nonfinite_blob_ < 0 ? std::string("not on this rank")
                          : "on this rank in blob '" +
                                (static_cast<size_t>(nonfinite_blob_) < param_names_.size()
                                     ? param_names_[nonfinite_blob_]
                                     : std::to_string(nonfinite_blob_)) + "'";
  ErrorBuilder() << "sync (" << method_name() << "): iteration " << current_iter_
                 << ": the accumulated gradient is not finite on " << ranks_not_finite
                 << " rank(s) (" << here << "): NaN or Inf in the gradients; lower base_lr, or "
                 << "set clip_gradients or sync_param.clip_norm";
}

void ResidualExchange::Exchange(int iter, const vector<Blob*>& params) {
  current_iter_ = iter;
  EnsureState(params);
  stats_.BeginStep(iter);
  const int64_t bytes_before = BytesSentSoFar();
  auto start = std::chrono::steady_clock::now();
  ClipAndAccumulate(params);
  stats_.AddTime(ExchangeStats::ACCUMULATE, SecondsSince(start));

  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  const float density = DensityAt(iter);
  int64_t sent = 0;
  const bool probe = param_.measure_capture() && density < 1.f;
  const int64_t probe_bytes = probe ? SumResidualsForProbe(params) : 0;
  if (density >= 1.f) {
    vector<Selection> all(params.size());
    for (Selection& s : all) s.all = true;
    sent = ReduceSelected(params, all);
    for (size_t b = 0; b < params.size(); ++b) {
      stats_.AddBlob({b < param_names_.size() ? param_names_[b] : std::to_string(b),
                      params[b]->count(), params[b]->count(), 0.f, 0.f, -1, 0});
    }
  } else {
    sent = ExchangeSparse(iter, params, SparseDensity(params, density));
    if (probe) RecordCapture(params);
  }
  if (stats_.writes_csv() && stats_.last_step_blobs().size() == params.size()) {
    for (size_t b = 0; b < params.size(); ++b) {
      if (IsDenseBlob(b) || params[b]->count() == 0) continue;
      int64_t min = 0;
      double sum = 0;
      LastSentMinAndSum(b, &min, &sum);
      stats_.SetBlobAge(b, iter - min, iter - sum / params[b]->count());
    }
  }
  stats_.EndStep(total, sent, BytesSentSoFar() - bytes_before - probe_bytes, DenseRingBytes(total),
                 density);
}

int64_t ResidualExchange::SumResidualsForProbe(const vector<Blob*>& params) {
  probe_summed_.clear();
  for (size_t b = 0; b < params.size(); ++b) {
    if (!IsDenseBlob(b)) probe_summed_.insert(probe_summed_.end(), residual_[b].begin(), residual_[b].end());
  }
  const int64_t before = BytesSentSoFar();
  if (comm_->size() > 1 && !probe_summed_.empty()) {
    comm_->AllReduceSum(probe_summed_.data(), static_cast<int64_t>(probe_summed_.size()));
  }
  return BytesSentSoFar() - before;
}

void ResidualExchange::RecordCapture(const vector<Blob*>& params) {
  // What was chosen this step: the coordinates cleared at this iteration.
  vector<uint8_t> sent;
  vector<float> scale;
  vector<int64_t> blob_begin;
  sent.reserve(probe_summed_.size());
  scale.reserve(probe_summed_.size());
  for (size_t b = 0; b < params.size(); ++b) {
    if (IsDenseBlob(b)) continue;
    blob_begin.push_back(static_cast<int64_t>(sent.size()));
    for (int32_t last : last_sent_[b]) sent.push_back(last == current_iter_ ? 1 : 0);
    const float* w = params[b]->cpu_data();
    for (int64_t i = 0; i < params[b]->count(); ++i) scale.push_back(std::fabs(w[i]) + param_.epsilon());
  }
  if (blob_begin.empty()) return;
  stats_.AddCapture(MeasureCapture(probe_summed_, sent, blob_begin),
                    MeasureCapture(probe_summed_, sent, blob_begin, &scale));
}

float ResidualExchange::SparseDensity(const vector<Blob*>& params, float density) const {
  int64_t dense = 0, sparse = 0, sparse_blobs = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    if (IsDenseBlob(b)) {
      dense += params[b]->count();
    } else {
      sparse += params[b]->count();
      ++sparse_blobs;
    }
  }
  if (sparse == 0) return density;
  // The blobs sent whole count against the budget, so the sparse ones get what is
  // left: the step then sends density * (all elements) in total. PlanBudget keeps
  // what is left at no less than 1 - max_dense_share of the target's budget; a
  // density_schedule value below the target may still leave less than one element
  // per sparse blob, which each then sends anyway.
  const double total = static_cast<double>(dense + sparse);
  const double left = std::max<double>(density * total - dense, static_cast<double>(sparse_blobs));
  return static_cast<float>(std::min(1.0, left / sparse));
}

void ResidualExchange::ClearSent(size_t b, const vector<int32_t>& indices) {
  CHECK(!on_device_) << "ClearSent works on host residuals";
  float* v = residual_[b].data();
  float* u = momentum_correction_ ? velocity_[b].data() : nullptr;
  int32_t* last = last_sent_[b].data();
  const int32_t iter = current_iter_;
  const int32_t* index = indices.data();
  // Indices are distinct, so threads never write the same element.
  ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      v[index[j]] = 0;
      last[index[j]] = iter;
    }
    if (u) {
      for (int64_t j = begin; j < end; ++j) u[index[j]] = 0;
    }
  });
}

void ResidualExchange::MarkAllSent(size_t b) {
  std::fill(last_sent_[b].begin(), last_sent_[b].end(), current_iter_);
}

void ResidualExchange::CheckFinite(size_t b, const float* values, int64_t count) const {
  bool finite = true;
  for (int64_t j = 0; j < count && finite; ++j) finite = std::isfinite(values[j]);
  if (finite) return;
  ErrorBuilder() << "sync (" << method_name() << "): iteration " << current_iter_
                 << ": the summed gradient of blob '"
                 << (b < param_names_.size() ? param_names_[b] : std::to_string(b))
                 << "' is not finite (NaN or Inf reached the exchange on some rank; lower "
                    "base_lr, or set clip_gradients or sync_param.clip_norm)";
}

void ResidualExchange::BroadcastMessage(std::string* message, int root) {
  if (comm_->size() < 2) return;
#ifdef USE_CUDA
  if (on_device_) {
    if (Communicator* device = DeviceCommunicator()) {
      BroadcastMessageOnDevice(message, root, device);
      return;
    }
  }
#endif
  // The others cannot know the length: it goes first.
  int64_t length = static_cast<int64_t>(message->size());
  comm_->Broadcast(&length, sizeof(length), root);
  message->resize(length);
  comm_->Broadcast(message->data(), length, root);
}

int64_t ResidualExchange::ReduceSelected(const vector<Blob*>& params,
                                         const vector<Selection>& selections) {
#ifdef USE_CUDA
  if (on_device_) return ReduceSelectedOnDevice(params, selections);
#endif
  auto start = std::chrono::steady_clock::now();
  int64_t total = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    total += selections[b].all ? params[b]->count()
                               : static_cast<int64_t>(selections[b].indices.size());
  }
  // One more value after the gradients: how many ranks hold a non-finite residual.
  values_.resize(total + 1);
  values_[total] = nonfinite_blob_ >= 0 ? 1.f : 0.f;
  int64_t pos = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    const float* v = residual_[b].data();
    if (selections[b].all) {
      std::memcpy(values_.data() + pos, v, sizeof(float) * params[b]->count());
      pos += params[b]->count();
    } else {
      const vector<int32_t>& indices = selections[b].indices;
      const int32_t* index = indices.data();
      float* out = values_.data() + pos;
      ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) out[j] = v[index[j]];
      });
      pos += static_cast<int64_t>(indices.size());
    }
  }
  stats_.AddTime(ExchangeStats::GATHER, SecondsSince(start));

  const bool limit = param_.max_relative_step() > 0 && step_rates_.size() == params.size();
  if (limit) local_values_.assign(values_.begin(), values_.begin() + total);
  start = std::chrono::steady_clock::now();
  if (comm_->size() > 1) comm_->AllReduceSum(values_.data(), total + 1);
  stats_.AddTime(ExchangeStats::ALLREDUCE, SecondsSince(start));
  CheckResidualsFinite(values_[total]);

  start = std::chrono::steady_clock::now();
  const float inv = 1.f / comm_->size();
  const bool magnitude = param_.score() == SyncParameter::MAGNITUDE;
  const float eps = param_.epsilon();
  pos = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    Blob* p = params[b];
    const int64_t n = p->count();
    const int64_t count = selections[b].all ? n : static_cast<int64_t>(selections[b].indices.size());
    CheckFinite(b, values_.data() + pos, count);
    float* diff = p->mutable_cpu_diff();
    float* v = residual_[b].data();
    const float* in = values_.data() + pos;
    if (selections[b].all) {
      ParallelFor(n, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) diff[i] = in[i] * inv;
      });
      // A blob sent whole behaves like plain momentum SGD: its velocity u carries on
      // (masking u only matters where coordinates wait in the residual).
      std::fill(v, v + n, 0.f);
      MarkAllSent(b);
      if (!known_importance_.empty()) {
        float* known = known_importance_[b].data();
        const float* w = p->cpu_data();
        for (int64_t i = 0; i < n; ++i) {
          known[i] = magnitude ? std::fabs(diff[i]) : std::fabs(diff[i]) / (std::fabs(w[i]) + eps);
        }
      }
    } else {
      std::fill(diff, diff + n, 0.f);
      const vector<int32_t>& indices = selections[b].indices;
      const int32_t* index = indices.data();
      ParallelFor(count, [=](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) diff[index[j]] = in[j] * inv;
      });
      ClearSent(b, indices);
      if (limit) LimitStep(b, *p, indices, local_values_.data() + pos);
      if (!known_importance_.empty()) {
        // What every rank now knows of these coordinates' importance: the stochastic
        // update's hint of which waiting coordinates are likely to matter.
        float* known = known_importance_[b].data();
        const float* w = p->cpu_data();
        for (int32_t i : indices) {
          known[i] = magnitude ? std::fabs(diff[i]) : std::fabs(diff[i]) / (std::fabs(w[i]) + eps);
        }
      }
    }
    pos += count;
  }
  stats_.AddTime(ExchangeStats::SCATTER, SecondsSince(start));
  return total;
}

double ResidualExchange::StepRate(size_t b) const {
  // What one step moves the weight: rate x value, times 1 / (1 - m) when the solver's
  // momentum goes on applying it.
  const double gain =
      momentum_correction_ || solver_momentum_ >= 1 ? 1.0 : 1.0 / (1.0 - solver_momentum_);
  return step_rates_[b] * gain;
}

void ResidualExchange::LimitStep(size_t b, Blob& param, const vector<int32_t>& indices,
                                 const float* local) {
  const double rate = StepRate(b);
  if (!(rate > 0)) return;
  const int64_t n = param.count();
  const float* w = param.cpu_data();
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) squares += double(w[i]) * w[i];
  const float rms = static_cast<float>(std::sqrt(squares / std::max<int64_t>(n, 1)));
  const float scale = static_cast<float>(param_.max_relative_step() / rate);
  float* diff = param.mutable_cpu_diff();
  float* v = residual_[b].data();
  int64_t capped = 0;
  for (size_t j = 0; j < indices.size(); ++j) {
    const int32_t i = indices[j];
    const float cap = scale * (std::fabs(w[i]) + rms);
    const float applied = diff[i];
    if (std::fabs(applied) <= cap) continue;
    // The rest goes back to the ranks' residuals in proportion to what each sent:
    // every rank keeps the same fraction of its own value, so their sum is exactly
    // N x (applied - cap) and conservation holds.
    const float keep = 1.f - cap / std::fabs(applied);
    diff[i] = std::copysign(cap, applied);
    v[i] = local[j] * keep;
    ++capped;
  }
  stats_.AddCapped(capped);
}

vector<int32_t> ResidualExchange::StochasticDraw(size_t b, double expected) {
  CHECK(!known_importance_.empty()) << "StochasticDraw needs TrackKnownImportance()";
  const uint64_t stream =
      SharedHash(param_.seed(), current_iter_, static_cast<int64_t>(b), kStochasticSalt);
#ifdef USE_CUDA
  if (on_device_) return StochasticDrawOnDevice(b, expected, stream);
#endif
  vector<int32_t> out;
  const int64_t n = static_cast<int64_t>(last_sent_[b].size());
  if (expected <= 0 || n == 0) return out;
  const int32_t* last = last_sent_[b].data();
  const float* known = known_importance_[b].data();
  const int64_t iter = current_iter_;
  // Weight of coordinate i: (age_i + 1) * (m_i + mean m), with age_i + 1 = iter -
  // last_i the steps of gradient it holds. The mean keeps never-sent coordinates in
  // the draw; every term is the same on every rank, so the draw needs no message.
  // Sequential double sums: the same bits on every rank whatever its thread count.
  double mean_known = 0;
  for (int64_t i = 0; i < n; ++i) mean_known += known[i];
  mean_known /= n;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += double(iter - last[i]) * (known[i] + mean_known);
  const bool by_age_only = !(total > 0);
  if (by_age_only) {
    total = 0;
    for (int64_t i = 0; i < n; ++i) total += double(iter - last[i]);
  }
  if (!(total > 0)) return out;
  const double scale = expected / total;
  for (int64_t i = 0; i < n; ++i) {
    const double weight = by_age_only ? double(iter - last[i])
                                      : double(iter - last[i]) * (known[i] + mean_known);
    if (CoordinateUniform(stream, i) < std::min(1.0, scale * weight)) {
      out.push_back(static_cast<int32_t>(i));
    }
  }
  return out;
}

void ResidualExchange::LastSentMinAndSum(size_t b, int64_t* min, double* sum) const {
#ifdef USE_CUDA
  if (on_device_) {
    LastSentMinAndSumOnDevice(b, min, sum);
    return;
  }
#endif
  int64_t smallest = current_iter_;
  double total = 0;
  for (int32_t last : last_sent_[b]) {
    smallest = std::min<int64_t>(smallest, last);
    total += last;
  }
  *min = smallest;
  *sum = total;
}

void ResidualExchange::CurrentAge(int64_t* max_age, double* mean_age) const {
  *max_age = 0;
  *mean_age = 0;
  int64_t min_last = current_iter_, count = 0;
  double sum_last = 0;
  for (size_t b = 0; b < last_sent_.size() && b < dense_blob_.size(); ++b) {
    if (IsDenseBlob(b) || last_sent_[b].empty()) continue;
    int64_t min = 0;
    double sum = 0;
    LastSentMinAndSum(b, &min, &sum);
    min_last = std::min(min_last, min);
    sum_last += sum;
    count += static_cast<int64_t>(last_sent_[b].size());
  }
  if (count == 0) return;
  *max_age = current_iter_ - min_last;
  *mean_age = current_iter_ - sum_last / count;
}

std::string ResidualExchange::SaveState() const {
  SyncHostMirror();
  std::string out;
  auto put = [&out](const void* data, size_t bytes) {
    out.append(static_cast<const char*>(data), bytes);
  };
  const uint32_t magic = kStateMagicV2;
  const uint64_t blobs = residual_.size();
  const uint8_t has_velocity = momentum_correction_ ? 1 : 0;
  put(&magic, 4);
  put(&blobs, 8);
  put(&has_velocity, 1);
  for (size_t b = 0; b < residual_.size(); ++b) {
    const uint64_t n = residual_[b].size();
    put(&n, 8);
    put(residual_[b].data(), 4 * n);
    if (has_velocity) put(velocity_[b].data(), 4 * n);
  }
  const uint8_t has_ages = last_sent_.size() == residual_.size() && !residual_.empty() ? 1 : 0;
  put(&has_ages, 1);
  if (has_ages) {
    for (const auto& last : last_sent_) put(last.data(), 4 * last.size());
  }
  const uint8_t has_known = known_importance_.size() == residual_.size() && !residual_.empty() ? 1 : 0;
  put(&has_known, 1);
  if (has_known) {
    for (const auto& known : known_importance_) put(known.data(), 4 * known.size());
  }
  const std::string method = SaveMethodState();
  const uint64_t method_bytes = method.size();
  put(&method_bytes, 8);
  put(method.data(), method.size());
  return out;
}

void ResidualExchange::RestoreState(const std::string& state) {
  size_t pos = 0;
  auto get = [&](void* data, size_t bytes) {
    CAFFE_REQUIRE(pos + bytes <= state.size())
        << "sync state is truncated (" << state.size() << " bytes)";
    std::memcpy(data, state.data() + pos, bytes);
    pos += bytes;
  };
  uint32_t magic = 0;
  uint64_t blobs = 0;
  uint8_t has_velocity = 0;
  get(&magic, 4);
  CAFFE_REQUIRE(magic == kStateMagicV1 || magic == kStateMagicV2)
      << "not a sync state file (bad magic)";
  get(&blobs, 8);
  get(&has_velocity, 1);
  // The solver said which blobs it will exchange: a state of another net is caught
  // here, naming the file, rather than at the first step.
  // (A state saved before the first step holds no blobs.)
  const bool check_sizes = !param_sizes_.empty() && blobs > 0;
  if (check_sizes) {
    CAFFE_REQUIRE(blobs == param_sizes_.size())
        << "sync state holds " << blobs << " blob(s), this net exchanges " << param_sizes_.size()
        << " (a snapshot of another net, or of a build that exchanged other blobs?)";
  }
  vector<vector<float>> residual(blobs), velocity(blobs);
  for (uint64_t b = 0; b < blobs; ++b) {
    uint64_t n = 0;
    get(&n, 8);
    if (check_sizes) {
      CAFFE_REQUIRE(static_cast<int64_t>(n) == param_sizes_[b])
          << "sync state blob " << b << " ("
          << (b < param_names_.size() ? param_names_[b] : std::to_string(b)) << ") holds " << n
          << " values, the net's has " << param_sizes_[b];
    }
    CAFFE_REQUIRE(pos + 4 * n * (has_velocity ? 2 : 1) <= state.size())
        << "sync state is truncated (" << state.size() << " bytes)";
    residual[b].resize(n);
    get(residual[b].data(), 4 * n);
    if (has_velocity) {
      velocity[b].resize(n);
      get(velocity[b].data(), 4 * n);
    }
  }
  vector<vector<int32_t>> last_sent;
  vector<vector<float>> known;
  std::string method_state;
  if (magic == kStateMagicV2) {
    uint8_t has_ages = 0, has_known = 0;
    get(&has_ages, 1);
    if (has_ages) {
      last_sent.resize(blobs);
      for (uint64_t b = 0; b < blobs; ++b) {
        last_sent[b].resize(residual[b].size());
        get(last_sent[b].data(), 4 * residual[b].size());
      }
    }
    get(&has_known, 1);
    if (has_known) {
      known.resize(blobs);
      for (uint64_t b = 0; b < blobs; ++b) {
        known[b].resize(residual[b].size());
        get(known[b].data(), 4 * residual[b].size());
      }
    }
    uint64_t method_bytes = 0;
    get(&method_bytes, 8);
    CAFFE_REQUIRE(method_bytes <= state.size() - pos)
        << "sync state is truncated (" << state.size() << " bytes)";
    method_state.assign(state.data() + pos, method_bytes);
    pos += method_bytes;
  }
  CAFFE_REQUIRE(pos == state.size()) << "sync state has trailing bytes";
  RestoreMethodState(method_state);
  if (has_velocity && !momentum_correction_) {
    LOG(WARNING) << "sync state was saved with momentum_correction, which is off now: its "
                    "velocities are dropped (the residuals are kept)";
    for (auto& u : velocity) u.clear();
  } else if (!has_velocity && momentum_correction_) {
    LOG(WARNING) << "sync state was saved without momentum_correction, which is on now: the "
                    "velocities start at zero";
    for (uint64_t b = 0; b < blobs; ++b) velocity[b].assign(residual[b].size(), 0.f);
  }
  residual_ = std::move(residual);
  velocity_ = std::move(velocity);
  last_sent_ = std::move(last_sent);
  known_importance_ = std::move(known);
  // In GPU mode the next step uploads what was restored.
  device_behind_ = true;
  host_behind_ = false;
}

}  // namespace caffe
