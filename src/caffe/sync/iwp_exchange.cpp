#include "caffe/sync/iwp_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "caffe/sync/index_codec.hpp"
#include "caffe/sync/shared_random.hpp"

namespace caffe {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Salt that separates the random extras' stream from the leader's.
constexpr uint64_t kExtrasSalt = 0x5a1e5ull;

// Message layout, per blob the leader owns, in blob order:
//   float threshold, float vmr, uint8 encoding, int64 count, encoded indices.
constexpr size_t kBlobHeaderBytes = 4 + 4 + 1 + 8;

}  // namespace

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
    for (size_t l = 0; l < m; ++l) if (!fixed[l]) free_weight += weight[l];
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
    for (size_t l = 0; l < m; ++l) if (fixed[l]) remaining -= k[l];
    remaining = std::max<int64_t>(0, remaining);
  }
  double free_weight = 0;
  for (size_t l = 0; l < m; ++l) if (!fixed[l]) free_weight += weight[l];
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
  std::sort(remainders.begin(), remainders.end(),
            [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
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

vector<int32_t> IwpExchange::SelectTopK(const float* importance, int64_t n, int64_t k) {
  vector<int32_t> out;
  if (k <= 0) return out;
  if (k >= n) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  vector<float> scratch(importance, importance + n);
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<float>());
  const float threshold = scratch[k - 1];
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i) above += importance[i] > threshold;
  // Everything strictly above the threshold, then ties in index order up to k: the
  // same input always gives the same set.
  int64_t ties_left = k - above;
  out.reserve(k);
  for (int64_t i = 0; i < n; ++i) {
    if (importance[i] > threshold) {
      out.push_back(static_cast<int32_t>(i));
    } else if (importance[i] == threshold && ties_left > 0) {
      out.push_back(static_cast<int32_t>(i));
      --ties_left;
    }
  }
  return out;
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

void IwpExchange::ChooseIndices(int iter, const vector<Blob*>& params, float density,
                                const vector<bool>& mine, vector<BlobChoice>* choices) {
  const size_t m = params.size();
  const bool fixed = param_.method() == SyncParameter::FIXED_THRESHOLD;
  // Importance and its VMR for every sparse blob: the budget split needs them all,
  // even where another rank leads.
  vector<size_t> sparse;
  vector<int64_t> sizes;
  bool lead_some = false, lead_all = true;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(*params[b])) continue;
    lead_some |= mine[b];
    lead_all &= mine[b];
  }
  const bool need_all = !fixed && lead_some && !lead_all;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(*params[b])) continue;
    if (!mine[b] && !need_all) continue;
    sparse.push_back(b);
    sizes.push_back(params[b]->count());
  }
  // From here on blob j of `sparse` is j to the kernels.
  SelectionKernels& kernels = Kernels();
  vector<const float*> residuals(m, nullptr);
  for (size_t b : sparse) residuals[b] = ResidualData(b);
  kernels.ComputeImportance(params, sparse, residuals, param_.epsilon());
  vector<double> vmrs;
  for (size_t j = 0; j < sparse.size(); ++j) {
    double sum = 0, sum_squares = 0;
    kernels.Sums(j, &sum, &sum_squares);
    vmrs.push_back(VarianceToMean(sum, sum_squares, sizes[j]));
  }
  if (fixed) {
    for (size_t j = 0; j < sparse.size(); ++j) {
      const size_t b = sparse[j];
      if (!mine[b]) continue;
      BlobChoice& c = (*choices)[b];
      c.threshold = param_.fixed_threshold();
      c.vmr = static_cast<float>(vmrs[j]);
      c.indices = kernels.SelectAtLeast(j, c.threshold);
    }
    return;
  }
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  const int64_t budget = std::max<int64_t>(1, static_cast<int64_t>(std::llround(density * total)));

  if (!param_.layer_wise()) {
    // One threshold for all sparse blobs: the budget-th largest importance overall.
    float threshold;
    if (param_.threshold_mode() == SyncParameter::SAMPLED) {
      const int64_t samples = std::max<int64_t>(1, static_cast<int64_t>(param_.sample_fraction() * total));
      const vector<int64_t> positions =
          SamplePositions(SharedHash(param_.seed(), iter, -1, 0x5a3b1eull), total, samples);
      const int64_t k_sample = std::max<int64_t>(1, static_cast<int64_t>(std::llround(double(budget) / total * samples)));
      threshold = kernels.KthLargestAt(kernels.All(), positions, std::min(k_sample, samples));
    } else {
      threshold = kernels.KthLargest(kernels.All(), std::min(budget, total));
    }
    for (size_t j = 0; j < sparse.size(); ++j) {
      const size_t b = sparse[j];
      if (!mine[b]) continue;
      BlobChoice& c = (*choices)[b];
      c.threshold = threshold;
      c.vmr = static_cast<float>(vmrs[j]);
      c.indices = kernels.SelectAtLeast(j, threshold);
    }
    return;
  }

  const vector<int64_t> k = SplitBudget(sizes, vmrs, budget, param_.vmr_exponent());
  for (size_t j = 0; j < sparse.size(); ++j) {
    const size_t b = sparse[j];
    if (!mine[b]) continue;
    BlobChoice& c = (*choices)[b];
    c.vmr = static_cast<float>(vmrs[j]);
    const int64_t n = sizes[j];
    if (param_.threshold_mode() == SyncParameter::SAMPLED) {
      // Estimate the (1 - k/n) quantile from a sample instead of selecting over all n.
      const int64_t samples = std::max<int64_t>(1, static_cast<int64_t>(param_.sample_fraction() * n));
      const vector<int64_t> positions =
          SamplePositions(SharedHash(param_.seed(), iter, static_cast<int64_t>(b), 0x5a3b1eull), n, samples);
      const int64_t k_sample = std::max<int64_t>(1, static_cast<int64_t>(std::llround(double(k[j]) / n * samples)));
      c.threshold = kernels.KthLargestAt(kernels.Span(j), positions, std::min(k_sample, samples));
      c.indices = kernels.SelectAtLeast(j, c.threshold);
    } else {
      c.indices = kernels.SelectTopK(j, k[j], &c.threshold);
    }
  }
}

int64_t IwpExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float density) {
  const size_t m = params.size();
  const int n_ranks = comm_->size();
  const int me = comm_->rank();
  const bool per_layer = param_.leader() == SyncParameter::PER_LAYER;

  // 6. Leaders, from the shared seed: no message needed to agree on them.
  vector<int> leader(m, -1);
  vector<bool> mine(m, false);
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(*params[b])) continue;
    leader[b] = LeaderFor(param_.seed(), iter, per_layer ? static_cast<int64_t>(b) : -1, n_ranks);
    mine[b] = leader[b] == me;
  }

  // 4-5. The leader's selection.
  auto start = std::chrono::steady_clock::now();
  vector<BlobChoice> choices(m);
  if (std::find(mine.begin(), mine.end(), true) != mine.end()) {
    ChooseIndices(iter, params, density, mine, &choices);
  }
  stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));

  // 7. Index broadcast, one message per leader rank holding all its blobs (over NCCL
  // in GPU mode when NCCL carries the values).
  start = std::chrono::steady_clock::now();
  vector<Selection> selections(m);
  vector<int64_t> index_bytes(m, 0);
  for (int root = 0; root < n_ranks; ++root) {
    vector<size_t> led;
    for (size_t b = 0; b < m; ++b) if (leader[b] == root) led.push_back(b);
    if (led.empty()) continue;
    std::string message;
    if (root == me) {
      for (size_t b : led) {
        const BlobChoice& c = choices[b];
        const int64_t count = static_cast<int64_t>(c.indices.size());
        const auto encoding = ChooseIndexEncoding(param_.index_encoding(), c.indices, params[b]->count());
        const uint8_t enc = static_cast<uint8_t>(encoding);
        message.append(reinterpret_cast<const char*>(&c.threshold), 4);
        message.append(reinterpret_cast<const char*>(&c.vmr), 4);
        message.append(reinterpret_cast<const char*>(&enc), 1);
        message.append(reinterpret_cast<const char*>(&count), 8);
        EncodeIndices(c.indices, params[b]->count(), encoding, &message);
      }
    }
    BroadcastMessage(&message, root);
    size_t pos = 0;
    for (size_t b : led) {
      BlobChoice& c = choices[b];
      const size_t blob_start = pos;
      CAFFE_REQUIRE(pos + kBlobHeaderBytes <= message.size()) << "index message from rank " << root << " truncated";
      uint8_t enc = 0;
      int64_t count = 0;
      std::memcpy(&c.threshold, message.data() + pos, 4);
      std::memcpy(&c.vmr, message.data() + pos + 4, 4);
      std::memcpy(&enc, message.data() + pos + 8, 1);
      std::memcpy(&count, message.data() + pos + 9, 8);
      pos += kBlobHeaderBytes;
      pos += DecodeIndices(message.data() + pos, static_cast<int64_t>(message.size() - pos),
                           static_cast<SyncParameter::IndexEncoding>(enc), count,
                           params[b]->count(), &selections[b].indices);
      index_bytes[b] = static_cast<int64_t>(pos - blob_start);
    }
  }
  stats_.AddTime(ExchangeStats::BROADCAST, SecondsSince(start));

  // 10. Shared-seed random extras join on every rank alike.
  start = std::chrono::steady_clock::now();
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(*params[b])) {
      selections[b].all = true;
      continue;
    }
    if (param_.random_fraction() > 0) {
      const int64_t n = params[b]->count();
      const int64_t extra = static_cast<int64_t>(param_.random_fraction() * n);
      vector<int32_t> random = SharedRandomSubset(param_.seed(), iter, static_cast<int64_t>(b), n, extra, kExtrasSalt);
      vector<int32_t> merged;
      merged.reserve(selections[b].indices.size() + random.size());
      std::set_union(selections[b].indices.begin(), selections[b].indices.end(), random.begin(),
                     random.end(), std::back_inserter(merged));
      selections[b].indices.swap(merged);
    }
  }
  stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));

  // 8-9. One all-reduce of the gathered values, scatter, clear.
  const int64_t sent = ReduceSelected(params, selections);
  for (size_t b = 0; b < m; ++b) {
    BlobSelection s;
    s.name = b < param_names_.size() ? param_names_[b] : std::to_string(b);
    s.elements = params[b]->count();
    s.sent = selections[b].all ? s.elements : static_cast<int64_t>(selections[b].indices.size());
    s.threshold = choices[b].threshold;
    s.vmr = choices[b].vmr;
    s.leader = leader[b];
    s.index_bytes = index_bytes[b];
    stats_.AddBlob(s);
  }
  return sent;
}

}  // namespace caffe
