#include "caffe/exchanges/iwp_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/index_codec.hpp"
#include "caffe/sync/shared_random.hpp"

namespace caffe {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Salt of the sampled-threshold positions' stream.
constexpr uint64_t kSampleSalt = 0x5a3b1eull;

}  // namespace

IwpExchange::IwpExchange(const SyncParameter& param, Transport transport)
    : ResidualExchange(param, std::move(transport)) {
  if (param_.method() == SyncParameter::IWP && param_.iwp_param().stochastic_fraction() > 0) {
    TrackKnownImportance();
  }
}

vector<int64_t> IwpExchange::SplitBudget(const vector<int64_t>& sizes, const vector<double>& vmr,
                                         int64_t budget, double exponent) {
  const size_t m = sizes.size();
  vector<int64_t> k(m, 0);
  if (m == 0) return k;
  double total_n = 0, weighted_vmr = 0;
  for (size_t l = 0; l < m; ++l) {
    total_n += sizes[l];
    weighted_vmr += sizes[l] * vmr[l];
  }
  const double mean_vmr = total_n > 0 ? weighted_vmr / total_n : 0;
  // Weight of a blob: its size, scaled by how peaked its importances are relative to
  // the average blob. A high VMR means a few coordinates carry most importance, so
  // the blob earns a larger share (exponent > 0) of what is sent.
  vector<double> weight(m);
  for (size_t l = 0; l < m; ++l) {
    const double ratio = (mean_vmr > 0 && vmr[l] > 0) ? vmr[l] / mean_vmr : (mean_vmr > 0 ? 0 : 1);
    weight[l] = sizes[l] * (exponent == 0 ? 1.0 : std::pow(ratio, exponent));
  }
  // Water-filling: blobs whose share exceeds their size are capped first and the rest
  // of the budget is split again among the others; only when no cap applies do blobs
  // whose share falls under one element get that one element.
  vector<bool> fixed(m, false);
  int64_t remaining = budget;
  for (size_t round = 0; round < 2 * m + 2; ++round) {
    double free_weight = 0;
    for (size_t l = 0; l < m; ++l)
      if (!fixed[l]) free_weight += weight[l];
    auto share_of = [&](size_t l) {
      return free_weight > 0 ? remaining * weight[l] / free_weight : 0.0;
    };
    bool capped = false;
    for (size_t l = 0; l < m; ++l) {
      if (!fixed[l] && share_of(l) >= sizes[l]) {
        k[l] = sizes[l];
        fixed[l] = capped = true;
      }
    }
    bool floored = false;
    if (!capped) {
      for (size_t l = 0; l < m; ++l) {
        if (!fixed[l] && share_of(l) < 1) {
          k[l] = std::min<int64_t>(1, sizes[l]);
          fixed[l] = floored = true;
        }
      }
    }
    if (!capped && !floored) break;
    remaining = budget;
    for (size_t l = 0; l < m; ++l)
      if (fixed[l]) remaining -= k[l];
    remaining = std::max<int64_t>(0, remaining);
  }
  double free_weight = 0;
  for (size_t l = 0; l < m; ++l)
    if (!fixed[l]) free_weight += weight[l];
  // Largest-remainder rounding so the free blobs add up to exactly `remaining`.
  vector<std::pair<double, size_t>> remainders;
  int64_t assigned = 0;
  for (size_t l = 0; l < m; ++l) {
    if (fixed[l]) continue;
    const double share = free_weight > 0 ? remaining * weight[l] / free_weight : 0;
    k[l] = std::min<int64_t>(sizes[l], static_cast<int64_t>(std::floor(share)));
    assigned += k[l];
    remainders.push_back({share - std::floor(share), l});
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  for (const auto& r : remainders) {
    if (assigned >= remaining) break;
    if (k[r.second] < sizes[r.second]) {
      ++k[r.second];
      ++assigned;
    }
  }
  // Everything got capped or floored but budget is left (weights of zero): hand the
  // rest to blobs with room, in order.
  for (size_t l = 0; l < m && assigned < remaining; ++l) {
    if (fixed[l] && k[l] < sizes[l] && k[l] <= 1) {
      const int64_t add = std::min(sizes[l] - k[l], remaining - assigned);
      k[l] += add;
      assigned += add;
    }
  }
  return k;
}

SelectionKernels& IwpExchange::Kernels() {
  // The kernels go where the residuals are (on the device in GPU mode with a device).
  if (on_device()) {
    if (!device_kernels_) device_kernels_ = CreateDeviceSelectionKernels();
    CHECK(device_kernels_ != nullptr) << "device residuals without device kernels";
    return *device_kernels_;
  }
  if (!host_kernels_) host_kernels_ = std::make_unique<HostSelectionKernels>();
  return *host_kernels_;
}

void IwpExchange::ChooseIndices(int iter, const vector<Blob*>& params, int64_t budget,
                                const vector<int64_t>& shared_budgets, const vector<bool>& mine,
                                const vector<vector<int32_t>>& drawn,
                                vector<BlobIndexRecord>* choices) {
  const bool fixed = param_.method() == SyncParameter::FIXED_THRESHOLD;
  // The blobs this rank leads; from here on blob j of `led` is j to the kernels.
  vector<size_t> led;
  vector<int64_t> sizes;
  for (size_t b = 0; b < params.size(); ++b) {
    if (IsDenseBlob(b) || !mine[b]) continue;
    led.push_back(b);
    sizes.push_back(params[b]->count());
  }
  if (led.empty()) return;
  SelectionKernels& kernels = Kernels();
  vector<const float*> residuals(params.size(), nullptr);
  for (size_t b : led) residuals[b] = ResidualData(b);
  kernels.ComputeImportance(params, led, residuals, param_.iwp_param().epsilon(),
                            param_.iwp_param().score() != IwpParameter::MAGNITUDE);
  vector<double> vmrs(led.size());
  bool all_finite = true;
  for (size_t j = 0; j < led.size(); ++j) {
    double sum = 0, sum_squares = 0;
    kernels.Sums(j, &sum, &sum_squares);
    BlobIndexRecord& c = (*choices)[led[j]];
    // A NaN or Inf anywhere in the residual (or the weights) shows in the sums. The
    // leader must not stop alone (the others would wait for its message for ever):
    // it says so in the message instead, and every rank stops on reading it.
    c.non_finite = !std::isfinite(sum) || !std::isfinite(sum_squares);
    all_finite &= !c.non_finite;
    vmrs[j] = c.non_finite ? 0 : VarianceToMean(sum, sum_squares, sizes[j]);
    c.vmr = static_cast<float>(vmrs[j]);
  }
  if (!all_finite) return;
  // The stochastic update's coordinates travel anyway: the leader's choice passes
  // over them (the VMRs above still describe the whole blob).
  for (size_t j = 0; j < led.size(); ++j) {
    if (!drawn[led[j]].empty()) kernels.Suppress(j, drawn[led[j]]);
  }
  if (fixed) {
    for (size_t j = 0; j < led.size(); ++j) {
      BlobIndexRecord& c = (*choices)[led[j]];
      c.threshold = param_.iwp_param().fixed_threshold();
      c.indices = kernels.SelectAtLeast(j, c.threshold);
    }
    return;
  }
  int64_t total = 0;
  for (int64_t n : sizes) total += n;

  if (!param_.iwp_param().layer_wise()) {
    // One threshold for all sparse blobs: the budget-th largest importance overall.
    float threshold;
    if (param_.iwp_param().threshold_mode() == IwpParameter::SAMPLED) {
      const int64_t samples =
          std::max<int64_t>(1, static_cast<int64_t>(param_.iwp_param().sample_fraction() * total));
      const vector<int64_t> positions =
          SamplePositions(SharedHash(param_.seed(), iter, -1, kSampleSalt), total, samples);
      const int64_t k_sample = std::max<int64_t>(
          1, static_cast<int64_t>(std::llround(double(budget) / total * samples)));
      threshold = kernels.KthLargestAt(kernels.All(), positions, std::min(k_sample, samples));
    } else {
      threshold = kernels.KthLargest(kernels.All(), std::min(std::max<int64_t>(budget, 1), total));
    }
    for (size_t j = 0; j < led.size(); ++j) {
      BlobIndexRecord& c = (*choices)[led[j]];
      c.threshold = threshold;
      c.indices = kernels.SelectAtLeast(j, threshold);
    }
    return;
  }

  const vector<int64_t> k =
      shared_budgets.empty() ? SplitBudget(sizes, vmrs, budget, param_.iwp_param().vmr_exponent())
                             : vector<int64_t>();
  for (size_t j = 0; j < led.size(); ++j) {
    const size_t b = led[j];
    BlobIndexRecord& c = (*choices)[b];
    const int64_t n = sizes[j];
    const int64_t k_blob = shared_budgets.empty() ? k[j] : shared_budgets[b];
    if (k_blob <= 0) continue;
    if (param_.iwp_param().threshold_mode() == IwpParameter::SAMPLED) {
      // Estimate the (1 - k/n) quantile from a sample instead of selecting over all n.
      const int64_t samples =
          std::max<int64_t>(1, static_cast<int64_t>(param_.iwp_param().sample_fraction() * n));
      const vector<int64_t> positions = SamplePositions(
          SharedHash(param_.seed(), iter, static_cast<int64_t>(b), kSampleSalt), n, samples);
      const int64_t k_sample =
          std::max<int64_t>(1, static_cast<int64_t>(std::llround(double(k_blob) / n * samples)));
      c.threshold = kernels.KthLargestAt(kernels.Span(j), positions, std::min(k_sample, samples));
      c.indices = kernels.SelectAtLeast(j, c.threshold);
    } else {
      c.indices = kernels.SelectTopK(j, k_blob, &c.threshold);
      // Fewer than k coordinates hold anything: send those, not zeros.
      if (c.threshold <= 0.f && !c.indices.empty()) c.indices = kernels.SelectAtLeast(j, 0.f);
    }
  }
}

vector<vector<BlobIndexRecord>> IwpExchange::BroadcastChoices(int iter, const vector<Blob*>& params,
                                                              const vector<vector<size_t>>& led,
                                                              const vector<BlobIndexRecord>& mine,
                                                              vector<int64_t>* record_bytes) {
  const size_t m = params.size();
  const int me = comm_->rank();
  record_bytes->assign(m, 0);
  vector<vector<BlobIndexRecord>> records(comm_->size(), vector<BlobIndexRecord>(m));
  // One message per leader rank holding all its blobs, in blob order.
  for (int root = 0; root < comm_->size(); ++root) {
    if (led[root].empty()) continue;
    std::string message;
    if (root == me) {
      for (size_t b : led[root]) {
        AppendBlobIndexRecord(mine[b], params[b]->count(), param_.index_encoding(), &message);
      }
    }
    BroadcastMessage(&message, root);
    int64_t pos = 0;
    for (size_t b : led[root]) {
      const int64_t bytes =
          ReadBlobIndexRecord(message.data() + pos, static_cast<int64_t>(message.size()) - pos,
                              params[b]->count(), &records[root][b]);
      (*record_bytes)[b] += bytes;
      pos += bytes;
    }
    CAFFE_REQUIRE(pos == static_cast<int64_t>(message.size()))
        << "index message from rank " << root << " has " << message.size() - pos
        << " trailing bytes";
  }
  for (int root = 0; root < comm_->size(); ++root) {
    for (size_t b : led[root]) {
      if (!records[root][b].non_finite) continue;
      ErrorBuilder() << "sync (" << method_name() << "): iteration " << iter
                     << ": the importance of blob '" << BlobName(b) << "' on rank " << root
                     << " (a leader) is not finite: NaN or Inf in its accumulated "
                     << "gradient or its weights (lower base_lr, or set clip_gradients or "
                     << "sync_param.clip_norm)";
    }
  }
  return records;
}

void IwpExchange::PlanSparseStep(int iter, const vector<Blob*>& params, float density) {
  const size_t m = params.size();
  const int n_ranks = comm_->size();
  const int me = comm_->rank();
  const IwpParameter::Leader mode = param_.iwp_param().leader();
  const bool every_rank = mode == IwpParameter::EVERY_RANK;
  const bool fixed = param_.method() == SyncParameter::FIXED_THRESHOLD;
  StepPlan& plan = plan_;
  plan = StepPlan();

  // 6. Leaders, from the shared seed: no message needed to agree on them.
  plan.leader.assign(m, -1);
  plan.mine.assign(m, false);
  plan.led.assign(n_ranks, {});
  vector<int64_t> sparse_sizes;
  int64_t sparse_total = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) continue;
    plan.sparse.push_back(b);
    sparse_sizes.push_back(params[b]->count());
    sparse_total += params[b]->count();
    if (every_rank) {
      plan.mine[b] = true;
      for (int r = 0; r < n_ranks; ++r) plan.led[r].push_back(b);
      continue;
    }
    const bool per_layer = mode == IwpParameter::PER_LAYER;
    plan.leader[b] =
        LeaderFor(param_.seed(), iter, per_layer ? static_cast<int64_t>(b) : -1, n_ranks);
    plan.mine[b] = plan.leader[b] == me;
    plan.led[plan.leader[b]].push_back(b);
  }
  const int64_t budget =
      std::max<int64_t>(1, std::llround(static_cast<double>(density) * sparse_total));

  // 10. The stochastic update's draw, on every rank alike: part of the budget for
  // coordinates that have waited long or mattered when last sent.
  plan.drawn.assign(m, {});
  int64_t drawn_total = 0;
  if (!fixed && param_.iwp_param().stochastic_fraction() > 0) {
    for (size_t b : plan.sparse) {
      plan.drawn[b] = StochasticDraw(
          b, param_.iwp_param().stochastic_fraction() * density * params[b]->count());
      drawn_total += static_cast<int64_t>(plan.drawn[b].size());
    }
  }
  plan.leader_budget = std::max<int64_t>(0, budget - drawn_total);

  // PER_LAYER and EVERY_RANK: every rank splits the budget alike, by the VMRs the
  // last step's messages carried, so that a leader needs only its own blobs'
  // importances (PER_LAYER) or every rank knows each one's share (EVERY_RANK).
  if (mode != IwpParameter::PER_STEP && !fixed && param_.iwp_param().layer_wise()) {
    vector<double> vmrs(plan.sparse.size(), 1.0);
    if (last_vmr_.size() == vmrs.size()) vmrs = last_vmr_;
    const vector<int64_t> split =
        SplitBudget(sparse_sizes, vmrs, plan.leader_budget, param_.iwp_param().vmr_exponent());
    plan.shared_budgets.assign(m, 0);
    for (size_t j = 0; j < plan.sparse.size(); ++j) {
      const size_t b = plan.sparse[j];
      if (!every_rank) {
        plan.shared_budgets[b] = split[j];
        continue;
      }
      // This rank's share of what the ranks pick together: enough that the union,
      // at the last step's overlap, fills the blob's budget.
      const double overlap = last_overlap_.size() == plan.sparse.size() ? last_overlap_[j] : 1.0;
      const int64_t room = params[b]->count() - static_cast<int64_t>(plan.drawn[b].size());
      const int64_t picks =
          std::min<int64_t>(room, std::llround(split[j] / std::max(overlap, 1.0 / n_ranks)));
      // The remainder goes to a different rank each step.
      const int turn = static_cast<int>(((me - iter) % n_ranks + n_ranks) % n_ranks);
      plan.shared_budgets[b] = picks / n_ranks + (turn < picks % n_ranks ? 1 : 0);
    }
  }
  plan.choices.assign(m, BlobIndexRecord());
  plan.thresholds.assign(m, 0.f);
  plan.vmrs.assign(m, 0.f);
  plan.overlap.assign(m, 1.0);
  plan.index_bytes.assign(m, 0);
  step_selections().assign(m, Selection());
  for (size_t b = 0; b < m; ++b) step_selections()[b].all = IsDenseBlob(b);
}

void IwpExchange::ChooseFor(const vector<size_t>& blobs, const vector<Blob*>& params) {
  // 4-5. The leader's selection, of the blobs of this list it leads.
  vector<bool> mine(params.size(), false);
  bool any = false;
  for (size_t b : blobs) {
    mine[b] = plan_.mine[b];
    any |= mine[b];
  }
  if (any) {
    ChooseIndices(current_iter(), params, plan_.leader_budget, plan_.shared_budgets, mine,
                  plan_.drawn, &plan_.choices);
  }
}

void IwpExchange::AgreeFor(const vector<size_t>& blobs, const vector<Blob*>& params) {
  const int n_ranks = comm_->size();
  const bool every_rank = param_.iwp_param().leader() == IwpParameter::EVERY_RANK;
  // 7. Index broadcast (over NCCL in GPU mode when NCCL carries the values): each
  // leader's records of the listed blobs it leads.
  vector<vector<size_t>> led(n_ranks);
  vector<bool> listed(params.size(), false);
  for (size_t b : blobs) listed[b] = true;
  for (int r = 0; r < n_ranks; ++r) {
    for (size_t b : plan_.led[r]) {
      if (listed[b]) led[r].push_back(b);
    }
  }
  vector<int64_t> index_bytes;
  const vector<vector<BlobIndexRecord>> records =
      BroadcastChoices(current_iter(), params, led, plan_.choices, &index_bytes);

  // The leaders' choices and the draw are disjoint (the draw was suppressed); their
  // union travels.
  vector<Selection>& selections = step_selections();
  for (size_t b : blobs) {
    if (IsDenseBlob(b)) {
      selections[b].all = true;
      continue;
    }
    plan_.index_bytes[b] = index_bytes[b];
    vector<int32_t> chosen;
    if (every_rank) {
      int64_t picked = 0;
      double vmr = 0;
      for (int r = 0; r < n_ranks; ++r) {
        const BlobIndexRecord& record = records[r][b];
        picked += static_cast<int64_t>(record.indices.size());
        vmr += record.vmr;
        plan_.thresholds[b] =
            r == 0 ? record.threshold : std::min(plan_.thresholds[b], record.threshold);
        vector<int32_t> merged;
        merged.reserve(chosen.size() + record.indices.size());
        std::set_union(chosen.begin(), chosen.end(), record.indices.begin(), record.indices.end(),
                       std::back_inserter(merged));
        chosen.swap(merged);
      }
      plan_.vmrs[b] = static_cast<float>(vmr / n_ranks);
      plan_.overlap[b] = picked > 0 ? static_cast<double>(chosen.size()) / picked : 1.0;
    } else {
      const BlobIndexRecord& record = records[plan_.leader[b]][b];
      chosen = record.indices;
      plan_.thresholds[b] = record.threshold;
      plan_.vmrs[b] = record.vmr;
    }
    const vector<int32_t>& drawn = plan_.drawn[b];
    selections[b].all = false;
    if (drawn.empty()) {
      selections[b].indices.swap(chosen);
    } else {
      selections[b].indices.clear();
      selections[b].indices.reserve(chosen.size() + drawn.size());
      std::merge(chosen.begin(), chosen.end(), drawn.begin(), drawn.end(),
                 std::back_inserter(selections[b].indices));
    }
  }
}

void IwpExchange::FinishSparseStep(const vector<Blob*>& params) {
  if (param_.iwp_param().leader() != IwpParameter::PER_STEP) {
    last_vmr_.clear();
    for (size_t b : plan_.sparse) last_vmr_.push_back(plan_.vmrs[b]);
  }
  if (param_.iwp_param().leader() == IwpParameter::EVERY_RANK) {
    last_overlap_.clear();
    for (size_t b : plan_.sparse) last_overlap_.push_back(plan_.overlap[b]);
  }
  const vector<Selection>& selections = step_selections();
  for (size_t b = 0; b < params.size(); ++b) {
    BlobSelection s;
    s.name = BlobName(b);
    s.elements = params[b]->count();
    s.sent = selections[b].all ? s.elements : static_cast<int64_t>(selections[b].indices.size());
    s.threshold = plan_.thresholds[b];
    s.vmr = plan_.vmrs[b];
    s.leader = plan_.leader[b];
    s.index_bytes = plan_.index_bytes[b];
    stats_.AddBlob(s);
  }
}

bool IwpExchange::OverlapsBuckets() const {
  // A bucket's choice needs the step's budgets before backward: the split by the last
  // step's VMRs, which one leader per step (PER_STEP) makes from fresh ones instead.
  return param_.method() == SyncParameter::IWP &&
         param_.iwp_param().leader() != IwpParameter::PER_STEP && param_.iwp_param().layer_wise();
}

void IwpExchange::ChooseBucket(const SparseBucket& bucket, const vector<Blob*>& params) {
  ChooseFor(bucket.blobs, params);
}

void IwpExchange::AgreeOnBucket(const SparseBucket& bucket, const vector<Blob*>& params) {
  AgreeFor(bucket.blobs, params);
}

int64_t IwpExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float density) {
  // The whole step at once: the same stages as a bucket's, over every blob.
  auto start = std::chrono::steady_clock::now();
  PlanSparseStep(iter, params, density);
  vector<size_t> all(params.size());
  for (size_t b = 0; b < all.size(); ++b) all[b] = b;
  ChooseFor(all, params);
  stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));
  start = std::chrono::steady_clock::now();
  AgreeFor(all, params);
  stats_.AddTime(ExchangeStats::BROADCAST, SecondsSince(start));
  // 8-9. One all-reduce of the gathered values, scatter, clear.
  const int64_t sent = ReduceSelected(params, step_selections());
  FinishSparseStep(params);
  return sent;
}

std::string IwpExchange::SaveMethodState() const {
  std::string out;
  for (const vector<double>* values : {&last_vmr_, &last_overlap_}) {
    const uint64_t count = values->size();
    out.append(reinterpret_cast<const char*>(&count), 8);
    out.append(reinterpret_cast<const char*>(values->data()), 8 * count);
  }
  return out;
}

void IwpExchange::RestoreMethodState(const std::string& state) {
  last_vmr_.clear();
  last_overlap_.clear();
  if (state.empty()) return;
  size_t pos = 0;
  for (vector<double>* values : {&last_vmr_, &last_overlap_}) {
    uint64_t count = 0;
    CAFFE_REQUIRE(state.size() - pos >= 8) << "sync state: IWP section truncated";
    std::memcpy(&count, state.data() + pos, 8);
    pos += 8;
    CAFFE_REQUIRE(count <= (state.size() - pos) / 8) << "sync state: IWP section truncated";
    values->resize(count);
    std::memcpy(values->data(), state.data() + pos, 8 * count);
    pos += 8 * count;
  }
  CAFFE_REQUIRE(pos == state.size()) << "sync state: IWP section has trailing bytes";
}

REGISTER_EXCHANGE(IWP, IwpExchange);
REGISTER_EXCHANGE(FIXED_THRESHOLD, IwpExchange);

}  // namespace caffe
