#include "caffe/exchanges/residual_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "caffe/sync/host_residual_kernels.hpp"
#include "caffe/sync/shared_random.hpp"

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
  bool fresh = false;
  if (!kernels_) {
    // The solver sets GPU mode before the first step; from then on the state stays
    // on one side.
    // Encoded values (FP16, INT8) go over the MPI path only, from host memory.
    const bool encoded = param_.value_encoding() != SyncParameter::FP32;
    if (blobs_.gpu && SupportsDeviceResiduals() && !encoded)
      kernels_ = CreateDeviceResidualKernels();
    if (!kernels_) kernels_ = std::make_unique<HostResidualKernels>();
    fresh = true;
  }
  if (dense_blob_.empty()) PlanBudget(params);
  CAFFE_REQUIRE(dense_blob_.size() == params.size())
      << "the exchange was planned for " << dense_blob_.size() << " blobs, this step has "
      << params.size();
  if (fresh || restored_) {
    ResidualState state = restored_ ? std::move(*restored_) : ResidualState();
    restored_.reset();
    kernels_->Load(CompleteState(std::move(state), params));
  }
  CAFFE_REQUIRE(kernels_->blobs() == params.size())
      << "sync state holds " << kernels_->blobs() << " blobs, the net has " << params.size();
  for (size_t b = 0; b < params.size(); ++b) {
    CAFFE_REQUIRE(kernels_->count(b) == params[b]->count())
        << "sync state blob " << b << " holds " << kernels_->count(b) << " values, the net's has "
        << params[b]->count();
  }
}

ResidualState ResidualExchange::CompleteState(ResidualState state,
                                              const vector<Blob*>& params) const {
  const size_t m = params.size();
  if (!state.residual.empty()) {
    // A restored state must describe exactly these blobs.
    CAFFE_REQUIRE(state.residual.size() == m)
        << "sync state holds " << state.residual.size() << " blobs, the net has " << m;
    for (size_t b = 0; b < m; ++b) {
      CAFFE_REQUIRE(static_cast<int64_t>(state.residual[b].size()) == params[b]->count())
          << "sync state blob " << b << " holds " << state.residual[b].size()
          << " values, the net's has " << params[b]->count();
    }
  } else {
    for (Blob* p : params) state.residual.emplace_back(p->count(), 0.f);
  }
  // Momentum correction keeps u; RestoreState has already matched a saved state's
  // velocities to the setting.
  state.velocity.resize(m);
  for (size_t b = 0; b < m; ++b) {
    if (!momentum_correction_) {
      state.velocity[b].clear();
    } else if (static_cast<int64_t>(state.velocity[b].size()) != params[b]->count()) {
      state.velocity[b].assign(params[b]->count(), 0.f);
    }
  }
  if (state.last_sent.empty()) {
    // A fresh start (or a state saved before ages were kept): nothing has waited yet.
    for (Blob* p : params) state.last_sent.emplace_back(p->count(), current_iter_ - 1);
  }
  if (!track_known_importance_) {
    state.known_importance.clear();
  } else if (state.known_importance.empty()) {
    for (Blob* p : params) state.known_importance.emplace_back(p->count(), 0.f);
  }
  return state;
}

const ResidualState& ResidualExchange::HostState() const {
  if (restored_) return *restored_;
  if (kernels_) return kernels_->Host();
  static const ResidualState kNone;
  return kNone;
}

void ResidualExchange::PlanBudget(const vector<Blob*>& params) {
  const size_t m = params.size();
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
      if (dense_blob_[b] && (largest == m || params[b]->count() > params[largest]->count()))
        largest = b;
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
       << " elements in " << dense_blobs << " blob(s) ("
       << (budget > 0 ? 100.0 * dense / budget : 0) << "% of the budget, max_dense_share "
       << param_.max_dense_share() << "); sparse: " << sparse_blobs << " blob(s) at density "
       << sparse_density << " on average:";
  for (size_t b = 0; b < m; ++b) {
    if (dense_blob_[b]) continue;
    line << " " << BlobName(b) << " " << params[b]->count() << "->"
         << std::llround(sparse_density * params[b]->count());
  }
  LOG(INFO) << line.str();
  if (!sparsified.empty()) {
    std::ostringstream names;
    for (size_t b : sparsified) names << " " << BlobName(b) << " (" << params[b]->count() << ")";
    LOG(INFO) << "sync budget: sparsified although under min_layer_size " << param_.min_layer_size()
              << ", so that the blobs sent whole fit in " << param_.max_dense_share()
              << " of the budget:" << names.str();
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

double ResidualExchange::PhaseSecondsSince(std::chrono::steady_clock::time_point start) const {
  kernels_->Synchronize();
  return SecondsSince(start);
}

void ResidualExchange::CheckResidualsFinite(float ranks_not_finite) const {
  if (!(ranks_not_finite > 0)) return;
  const int blob = kernels_->NonFiniteBlob();
  const std::string here =
      blob < 0 ? std::string("not on this rank")
               : "on this rank in blob '" + BlobName(static_cast<size_t>(blob)) + "'";
  ErrorBuilder() << "sync (" << method_name() << "): iteration " << current_iter_
                 << ": the accumulated gradient is not finite on " << ranks_not_finite
                 << " rank(s) (" << here << "): NaN or Inf in the gradients; lower base_lr, or "
                 << "set clip_gradients or sync_param.clip_norm";
}

void ResidualExchange::Exchange(int iter, const vector<Blob*>& params) {
  if (overlapped_) {
    CHECK_EQ(iter, current_iter_) << "sync: BeginBackward and Exchange of different steps";
    FinishOverlappedStep(iter, params);
    return;
  }
  current_iter_ = iter;
  EnsureState(params);
  stats_.BeginStep(iter);
  const int64_t bytes_before = BytesSentSoFar();
  auto start = std::chrono::steady_clock::now();
  kernels_->ClipAndAccumulate(params, LocalClipNorm(), momentum_);
  stats_.AddTime(ExchangeStats::ACCUMULATE, SecondsSince(start));

  const float density = DensityAt(iter);
  int64_t sent = 0;
  if (density >= 1.f) {
    vector<Selection> all(params.size());
    for (Selection& s : all) s.all = true;
    sent = ReduceSelected(params, all);
    for (size_t b = 0; b < params.size(); ++b) {
      stats_.AddBlob({BlobName(b), params[b]->count(), params[b]->count(), 0.f, 0.f, -1, 0});
    }
  } else {
    sent = ExchangeSparse(iter, params, SparseDensity(params, density));
  }
  EndStepAccounting(iter, params, sent, BytesSentSoFar() - bytes_before, density);
}

void ResidualExchange::EndStepAccounting(int iter, const vector<Blob*>& params, int64_t sent,
                                         int64_t bytes, float density) {
  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  if (TracksAges() && stats_.writes_csv() && stats_.last_step_blobs().size() == params.size()) {
    for (size_t b = 0; b < params.size(); ++b) {
      if (IsDenseBlob(b) || params[b]->count() == 0) continue;
      int64_t min = 0;
      double sum = 0;
      LastSentMinAndSum(b, &min, &sum);
      stats_.SetBlobAge(b, iter - min, iter - sum / params[b]->count());
    }
  }
  // The after-warm-up totals start once the density ramp has reached its end, as
  // DGC counts its exponential ramp as warm-up too.
  stats_.EndStep(total, sent, bytes, DenseRingBytes(total), density,
                 density < 1.f && density == param_.density());
}

bool ResidualExchange::CanOverlapStep(float density) const {
  // Momentum correction adds weight decay to the diffs after backward: it keeps the
  // whole-step path.
  return comm_->size() > 1 && kernels_->SupportsBuckets() && !momentum_correction_ &&
         (density >= 1.f || OverlapsBuckets());
}

void ResidualExchange::PlanBuckets(const vector<Blob*>& params) {
  // Backward order: the highest ready layer first (blobs without one are final only
  // after the whole backward). A bucket closes at a layer boundary once it holds an
  // eighth of all elements: few enough collectives that their latency stays small, and
  // enough buckets that the first ones leave backward much work to hide them behind.
  const size_t m = params.size();
  const bool known = blobs_.ready_layers.size() == m;
  vector<size_t> order(m);
  for (size_t b = 0; b < m; ++b) order[b] = b;
  auto ready = [&](size_t b) {
    return known ? blobs_.ready_layers[b] : std::numeric_limits<int>::min();
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ready(a) > ready(b); });
  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  const int64_t enough = std::max<int64_t>(1, total / 8);
  buckets_.clear();
  int64_t filled = 0;
  for (size_t j = 0; j < m; ++j) {
    const size_t b = order[j];
    if (buckets_.empty() || (filled >= enough && ready(b) != buckets_.back().ready_after_layer)) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().blobs.push_back(b);
    buckets_.back().ready_after_layer = ready(b);
    filled += params[b]->count();
  }
}

void ResidualExchange::BeginBackward(int iter, const vector<Blob*>& params) {
  overlapped_ = false;
  if (comm_->size() < 2) return;
  current_iter_ = iter;
  EnsureState(params);
  const float density = DensityAt(iter);
  if (!CanOverlapStep(density)) return;
  if (buckets_.empty()) PlanBuckets(params);
  if (!background_) background_ = std::make_unique<CommThread>();
  stats_.BeginStep(iter);
  step_bytes_before_ = BytesSentSoFar();
  step_params_ = params;
  step_density_ = density;
  step_selections_.assign(params.size(), Selection());
  for (Selection& s : step_selections_) s.all = true;  // a dense step; PlanSparseStep says more
  if (density < 1.f) {
    const auto start = std::chrono::steady_clock::now();
    PlanSparseStep(iter, params, SparseDensity(params, density));
    stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));
  }
  buckets_started_ = 0;
  overlapped_ = true;
}

void ResidualExchange::OnLayerBackward(int layer) {
  if (!overlapped_) return;
  while (buckets_started_ < buckets_.size() &&
         buckets_[buckets_started_].ready_after_layer >= layer) {
    StartBucket(buckets_started_++);
  }
}

void ResidualExchange::StartBucket(size_t i) {
  SparseBucket& bucket = buckets_[i];
  auto start = std::chrono::steady_clock::now();
  bucket.finite = kernels_->ClipAndAccumulateBucket(step_params_, bucket.blobs, LocalClipNorm(),
                                                    momentum_, /*first=*/i == 0);
  stats_.AddTime(ExchangeStats::ACCUMULATE, SecondsSince(start));
  if (step_density_ < 1.f) {
    start = std::chrono::steady_clock::now();
    ChooseBucket(bucket, step_params_);
    stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));
  }
  // The bucket's blobs are final and accumulated: the main thread touches them no more
  // this step, while the thread reads their v and moves their values.
  background_->Post([this, &bucket] { ReduceBucket(&bucket); });
}

void ResidualExchange::ReduceBucket(SparseBucket* bucket) {
  auto start = std::chrono::steady_clock::now();
  if (step_density_ < 1.f) AgreeOnBucket(*bucket, step_params_);
  bucket->agree_seconds = SecondsSince(start);
  start = std::chrono::steady_clock::now();
  int64_t total = 0;
  for (size_t b : bucket->blobs) {
    const Selection& s = step_selections_[b];
    total += s.all ? step_params_[b]->count() : static_cast<int64_t>(s.indices.size());
  }
  bucket->values.resize(total + 1);
  int64_t pos = 0;
  for (size_t b : bucket->blobs) {
    const Selection& s = step_selections_[b];
    kernels_->CopySelected(b, s, bucket->values.data() + pos);
    pos += s.all ? step_params_[b]->count() : static_cast<int64_t>(s.indices.size());
  }
  bucket->values[total] = bucket->finite ? 0.f : 1.f;
  bucket->reduced = ReducedValues();
  bucket->reduced.values = bucket->values.data();
  bucket->reduced.total = total;
  if (param_.max_relative_step() > 0) {
    bucket->local.assign(bucket->values.begin(), bucket->values.begin() + total);
    bucket->reduced.local = bucket->local.data();
  }
  bucket->gather_seconds = SecondsSince(start);
  start = std::chrono::steady_clock::now();
  bucket->zero_arrivals = AllReduceValues(&bucket->reduced, &bucket->rounding);
  bucket->allreduce_seconds = SecondsSince(start);
}

void ResidualExchange::FinishOverlappedStep(int iter, const vector<Blob*>& params) {
  CHECK(params == step_params_) << "sync: the parameters changed within a step";
  // Buckets backward did not report (no observer, or blobs final only at the end).
  while (buckets_started_ < buckets_.size()) StartBucket(buckets_started_++);
  auto start = std::chrono::steady_clock::now();
  background_->Drain();
  stats_.AddTime(ExchangeStats::WAIT, SecondsSince(start));
  int64_t sent = 0;
  for (const SparseBucket& bucket : buckets_) {
    stats_.AddTime(ExchangeStats::BROADCAST, bucket.agree_seconds);
    stats_.AddTime(ExchangeStats::GATHER, bucket.gather_seconds);
    stats_.AddTime(ExchangeStats::ALLREDUCE, bucket.allreduce_seconds);
    stats_.AddZeroArrivals(bucket.zero_arrivals);
    sent += bucket.reduced.total;
  }
  start = std::chrono::steady_clock::now();
  for (const SparseBucket& bucket : buckets_) {
    ApplyReduced(params, bucket.blobs, step_selections_, bucket.reduced);
  }
  stats_.AddTime(ExchangeStats::SCATTER, SecondsSince(start));
  if (step_density_ < 1.f) {
    FinishSparseStep(params);
  } else {
    for (size_t b = 0; b < params.size(); ++b) {
      stats_.AddBlob({BlobName(b), params[b]->count(), params[b]->count(), 0.f, 0.f, -1, 0});
    }
  }
  overlapped_ = false;
  EndStepAccounting(iter, params, sent, BytesSentSoFar() - step_bytes_before_, step_density_);
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

void ResidualExchange::CheckFinite(size_t b, const float* values, int64_t count) const {
  bool finite = true;
  for (int64_t j = 0; j < count && finite; ++j) finite = std::isfinite(values[j]);
  if (finite) return;
  ErrorBuilder() << "sync (" << method_name() << "): iteration " << current_iter_
                 << ": the summed gradient of blob '" << BlobName(b)
                 << "' is not finite (NaN or Inf reached the exchange on some rank; lower "
                    "base_lr, or set clip_gradients or sync_param.clip_norm)";
}

Communicator* ResidualExchange::KernelMemoryCommunicator() const {
  // The transport's host communicator takes host memory, its device one device memory.
  return kernels_->memory() == BufferMemory::HOST ? comm_.get() : device_comm_.get();
}

void ResidualExchange::RecordDeviceBytes(const char* op, int64_t before) {
  if (device_comm_ == nullptr) return;  // comm_ itself counted them
  // The device communicator's bytes go into comm_'s counters, where the step's
  // accounting (BytesSentSoFar) reads them.
  CommStats::Entry& entry = comm_->mutable_stats().by_op[op];
  ++entry.calls;
  entry.bytes_sent += device_comm_->stats().total_bytes_sent() - before;
}

void ResidualExchange::BroadcastMessage(std::string* message, int root) {
  if (comm_->size() < 2) return;
  Communicator* device = KernelMemoryCommunicator();
  if (device == nullptr || device == comm_.get()) {
    // The others cannot know the length: it goes first.
    int64_t length = static_cast<int64_t>(message->size());
    comm_->Broadcast(&length, sizeof(length), root);
    message->resize(length);
    comm_->Broadcast(message->data(), length, root);
    return;
  }
  // The device communicator moves device memory only. The message is a few kilobytes
  // made and read on the host, so the staging copies cost little; what it buys is one
  // transport for all the step's data, the one picked for the network (comm_ stays
  // the control plane: bootstrap, barriers, stop flags).
  const int64_t before = device->stats().total_bytes_sent();
  const bool is_root = comm_->rank() == root;
  if (!message_staging_) message_staging_ = kernels_->NewBuffer();
  KernelBuffer& staging = *message_staging_;
  int64_t length = static_cast<int64_t>(message->size());
  staging.Reserve(sizeof(length));
  if (is_root) kernels_->CopyFromHost(&length, sizeof(length), staging.data());
  device->Broadcast(staging.data(), sizeof(length), root);
  kernels_->CopyToHost(staging.data(), sizeof(length), &length);
  CAFFE_REQUIRE(length >= 0) << "message broadcast from rank " << root << ": negative length "
                             << length;
  message->resize(length);
  staging.Reserve(length);
  if (is_root) kernels_->CopyFromHost(message->data(), length, staging.data());
  device->Broadcast(staging.data(), length, root);
  if (!is_root) kernels_->CopyToHost(staging.data(), length, message->data());
  RecordDeviceBytes("broadcast_device", before);
}

void ResidualExchange::AllReduceSum(float* values, int64_t count) {
  if (comm_->size() < 2 || count == 0) return;
  Communicator* comm = KernelMemoryCommunicator();
  if (comm == comm_.get()) {
    comm_->AllReduceSum(values, count);
    return;
  }
  if (comm != nullptr) {
    const int64_t before = comm->stats().total_bytes_sent();
    comm->AllReduceSum(values, count);
    RecordDeviceBytes("allreduce_device", before);
    return;
  }
  // Device memory without a device communicator: through host memory and comm_.
  host_values_.resize(count);
  kernels_->CopyToHost(values, count * sizeof(float), host_values_.data());
  comm_->AllReduceSum(host_values_.data(), count);
  kernels_->CopyFromHost(host_values_.data(), count * sizeof(float), values);
}

void ResidualExchange::AllGatherBytes(const void* in, int64_t bytes, void* out) {
  const int n = comm_->size();
  if (n < 2) {
    kernels_->Copy(in, bytes, out);
    return;
  }
  Communicator* comm = KernelMemoryCommunicator();
  if (comm == comm_.get()) {
    comm_->AllGatherBytes(in, bytes, out);
    return;
  }
  if (comm != nullptr) {
    const int64_t before = comm->stats().total_bytes_sent();
    comm->AllGatherBytes(in, bytes, out);
    RecordDeviceBytes("allgather_device", before);
    return;
  }
  vector<char> send(bytes), receive(bytes * n);
  kernels_->CopyToHost(in, bytes, send.data());
  comm_->AllGatherBytes(send.data(), bytes, receive.data());
  kernels_->CopyFromHost(receive.data(), bytes * n, out);
}

int64_t ResidualExchange::ReduceSelected(const vector<Blob*>& params,
                                         const vector<Selection>& selections) {
  ResidualKernels& kernels = *kernels_;
  auto start = std::chrono::steady_clock::now();
  ReducedValues reduced;
  for (size_t b = 0; b < params.size(); ++b) {
    reduced.total +=
        selections[b].all ? params[b]->count() : static_cast<int64_t>(selections[b].indices.size());
  }
  // The rate limit splits a cut value back by what each rank sent: keep a copy.
  const bool limit = param_.max_relative_step() > 0 && learning_rate_.has_value();
  // One more value after the gradients: how many ranks hold a non-finite residual.
  reduced.values = kernels.GatherSelected(selections, limit);
  reduced.local = limit ? kernels.LocalValues() : nullptr;
  stats_.AddTime(ExchangeStats::GATHER, PhaseSecondsSince(start));

  start = std::chrono::steady_clock::now();
  stats_.AddZeroArrivals(AllReduceValues(&reduced, &rounding_));
  stats_.AddTime(ExchangeStats::ALLREDUCE, PhaseSecondsSince(start));

  start = std::chrono::steady_clock::now();
  vector<size_t> blobs(params.size());
  for (size_t b = 0; b < blobs.size(); ++b) blobs[b] = b;
  ApplyReduced(params, blobs, selections, reduced);
  stats_.AddTime(ExchangeStats::SCATTER, PhaseSecondsSince(start));
  return reduced.total;
}

int64_t ResidualExchange::AllReduceValues(ReducedValues* reduced, vector<float>* rounding) {
  const int64_t total = reduced->total;
  float* values = reduced->values;
  // FP16 and INT8: what the wire's roundings take off this rank's values goes back
  // into its residuals (ApplyReduced; the kernels are the host ones then).
  const bool encoded = param_.value_encoding() != SyncParameter::FP32 && comm_->size() > 1;
  // In an INT8 block the non-finite count shares its scale with the values before it:
  // scaled up, it sets that scale and arrives whole (its neighbours then round to zero
  // and wait, on a step that ends the job anyway).
  const bool int8 = encoded && param_.value_encoding() == SyncParameter::INT8;
  reduced->flag_scale = int8 ? 16777216.f : 1.f;
  reduced->rounding = nullptr;
  if (!encoded) {
    AllReduceSum(values, total + 1);
    return 0;
  }
  rounding->assign(total + 1, 0.f);
  values[total] *= reduced->flag_scale;
  if (int8) {
    comm_->AllReduceSumInt8(values, total + 1, rounding->data());
  } else {
    comm_->AllReduceSumHalf(values, total + 1, rounding->data());
  }
  reduced->rounding = rounding->data();
  return std::count(values, values + total, 0.f);
}

void ResidualExchange::ApplyReduced(const vector<Blob*>& params, const vector<size_t>& blobs,
                                    const vector<Selection>& selections,
                                    const ReducedValues& reduced) {
  ResidualKernels& kernels = *kernels_;
  const int64_t total = reduced.total;
  const float* values = reduced.values;
  float ranks_not_finite = 0;
  kernels.CopyToHost(values + total, sizeof(float), &ranks_not_finite);
  ranks_not_finite = std::round(ranks_not_finite / reduced.flag_scale);
  CheckResidualsFinite(ranks_not_finite);

  auto count_of = [&](size_t b) {
    return selections[b].all ? params[b]->count()
                             : static_cast<int64_t>(selections[b].indices.size());
  };
  // One test of all the summed values, and only on failure a search for the culprit,
  // blob by blob. The values are the same on every rank, so every rank stops alike.
  if (!kernels.AllFinite(values, total)) {
    vector<float> host(total);
    kernels.CopyToHost(values, total * sizeof(float), host.data());
    int64_t pos = 0;
    for (size_t b : blobs) {
      CheckFinite(b, host.data() + pos, count_of(b));
      pos += count_of(b);
    }
  }
  const float inv = 1.f / comm_->size();
  const bool divide_by_weight = param_.iwp_param().score() != IwpParameter::MAGNITUDE;
  // The rate limit hands a cut value back in proportion to what each rank sent. With
  // FP16 or INT8 that is what travelled of it (its value less its roundings, which go back
  // whole): then the ranks' shares add up to the cut exactly.
  const bool limit = reduced.local != nullptr && learning_rate_.has_value();
  const float* sent_values = limit ? reduced.local : nullptr;
  if (limit && reduced.rounding) {
    travelled_.resize(total);
    for (int64_t i = 0; i < total; ++i) travelled_[i] = sent_values[i] - reduced.rounding[i];
    sent_values = travelled_.data();
  }
  int64_t pos = 0;
  for (size_t b : blobs) {
    Blob* p = params[b];
    const Selection& selection = selections[b];
    kernels.ScatterSelected(b, selection, p, values + pos, inv);
    kernels.ClearSelected(b, selection, current_iter_);
    if (limit && !selection.all) LimitStep(b, selection, p, sent_values + pos);
    if (reduced.rounding) kernels.AddSelected(b, selection, reduced.rounding + pos);
    // What every rank now knows of these coordinates' importance: the stochastic
    // update's hint of which waiting coordinates are likely to matter.
    if (kernels.tracks_known_importance()) {
      kernels.RecordKnownImportance(b, selection, *p, param_.iwp_param().epsilon(),
                                    divide_by_weight);
    }
    pos += count_of(b);
  }
}

double ResidualExchange::StepRate(size_t b) const {
  // What one step moves the weight: rate x value, times 1 / (1 - m) when the solver's
  // momentum goes on applying it.
  const double gain =
      momentum_correction_ || solver_momentum_ >= 1 ? 1.0 : 1.0 / (1.0 - solver_momentum_);
  return BlobRate(b) * gain;
}

void ResidualExchange::LimitStep(size_t b, const Selection& selection, Blob* param,
                                 const float* local) {
  const double rate = StepRate(b);
  if (!(rate > 0)) return;
  const float scale = static_cast<float>(param_.max_relative_step() / rate);
  stats_.AddCapped(kernels_->LimitSelected(b, selection, param, scale, local));
}

vector<int32_t> ResidualExchange::StochasticDraw(size_t b, double expected) {
  CHECK(kernels_->tracks_known_importance()) << "StochasticDraw needs TrackKnownImportance()";
  const uint64_t stream =
      SharedHash(param_.seed(), current_iter_, static_cast<int64_t>(b), kStochasticSalt);
  return kernels_->StochasticDraw(b, current_iter_, expected, stream);
}

void ResidualExchange::LastSentMinAndSum(size_t b, int64_t* min, double* sum) const {
  kernels_->LastSentMinAndSum(b, current_iter_, min, sum);
}

void ResidualExchange::CurrentAge(int64_t* max_age, double* mean_age) const {
  *max_age = 0;
  *mean_age = 0;
  if (!kernels_ || !TracksAges()) return;
  int64_t min_last = current_iter_, count = 0;
  double sum_last = 0;
  for (size_t b = 0; b < kernels_->blobs() && b < dense_blob_.size(); ++b) {
    if (IsDenseBlob(b) || kernels_->count(b) == 0) continue;
    int64_t min = 0;
    double sum = 0;
    LastSentMinAndSum(b, &min, &sum);
    min_last = std::min(min_last, min);
    sum_last += sum;
    count += kernels_->count(b);
  }
  if (count == 0) return;
  *max_age = current_iter_ - min_last;
  *mean_age = current_iter_ - sum_last / count;
}

std::string ResidualExchange::SaveState() const {
  const ResidualState& state = HostState();
  std::string out;
  auto put = [&out](const void* data, size_t bytes) {
    out.append(static_cast<const char*>(data), bytes);
  };
  const uint32_t magic = kStateMagicV2;
  const uint64_t blobs = state.residual.size();
  const uint8_t has_velocity = momentum_correction_ ? 1 : 0;
  put(&magic, 4);
  put(&blobs, 8);
  put(&has_velocity, 1);
  for (size_t b = 0; b < blobs; ++b) {
    const uint64_t n = state.residual[b].size();
    put(&n, 8);
    put(state.residual[b].data(), 4 * n);
    if (has_velocity) {
      CHECK_EQ(state.velocity[b].size(), n) << "blob " << b << ": momentum correction without u";
      put(state.velocity[b].data(), 4 * n);
    }
  }
  const uint8_t has_ages = state.last_sent.size() == blobs && blobs > 0 ? 1 : 0;
  put(&has_ages, 1);
  if (has_ages) {
    for (const auto& last : state.last_sent) put(last.data(), 4 * last.size());
  }
  const uint8_t has_known = state.known_importance.size() == blobs && blobs > 0 ? 1 : 0;
  put(&has_known, 1);
  if (has_known) {
    for (const auto& known : state.known_importance) put(known.data(), 4 * known.size());
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
  const bool check_sizes = !blobs_.sizes.empty() && blobs > 0;
  if (check_sizes) {
    CAFFE_REQUIRE(blobs == blobs_.sizes.size())
        << "sync state holds " << blobs << " blob(s), this net exchanges " << blobs_.sizes.size()
        << " (a snapshot of another net, or of a build that exchanged other blobs?)";
  }
  vector<vector<float>> residual(blobs), velocity(blobs);
  for (uint64_t b = 0; b < blobs; ++b) {
    uint64_t n = 0;
    get(&n, 8);
    if (check_sizes) {
      CAFFE_REQUIRE(static_cast<int64_t>(n) == blobs_.sizes[b])
          << "sync state blob " << b << " (" << BlobName(b) << ") holds " << n
          << " values, the net's has " << blobs_.sizes[b];
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
  // The next step hands it to the kernels (uploads it in GPU mode).
  restored_.emplace();
  restored_->residual = std::move(residual);
  restored_->velocity = std::move(velocity);
  restored_->last_sent = std::move(last_sent);
  restored_->known_importance = std::move(known);
}

}  // namespace caffe
