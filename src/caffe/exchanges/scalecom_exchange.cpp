#include "caffe/exchanges/scalecom_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/index_codec.hpp"
#include "caffe/sync/state_codec.hpp"
#include "caffe/sync/top_k.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

int ScaleComExchange::LeaderAt(uint64_t seed, int64_t iter, int world_size) {
  const uint64_t turn = seed % static_cast<uint64_t>(world_size) + static_cast<uint64_t>(iter);
  return static_cast<int>(turn % static_cast<uint64_t>(world_size));
}

int64_t ScaleComExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float density) {
  const size_t m = params.size();
  const float beta = param_.scalecom_param().beta();
  if (filtered_.empty()) filtered_.resize(m);
  CAFFE_REQUIRE(filtered_.size() == m)
      << "sync state (SCALECOM) holds " << filtered_.size() << " filtered blobs, the net has " << m;

  // The filter runs on every rank, so that each holds its own f when its turn comes.
  auto start = std::chrono::steady_clock::now();
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) continue;
    const int64_t n = params[b]->count();
    vector<float>& f = filtered_[b];
    if (f.empty()) f.assign(n, 0.f);
    CAFFE_REQUIRE(static_cast<int64_t>(f.size()) == n)
        << "sync state (SCALECOM): blob '" << BlobName(b) << "' holds " << f.size()
        << " filtered values, the net's has " << n;
    const float* v = ResidualData(b);
    float* out = f.data();
    ParallelFor(n, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = (1.f - beta) * out[i] + beta * v[i];
    });
  }

  // The leader's top-k of |f|, blob by blob, at the same density in every blob.
  const int leader = LeaderAt(param_.seed(), iter, comm_->size());
  std::string message;
  if (comm_->rank() == leader) {
    vector<float> score;
    for (size_t b = 0; b < m; ++b) {
      if (IsDenseBlob(b)) continue;
      const vector<float>& f = filtered_[b];
      const int64_t n = static_cast<int64_t>(f.size());
      score.resize(n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        score[i] = std::fabs(f[i]);
        sum += score[i];
      }
      BlobIndexRecord record;
      // A NaN would not rank: the leader says so in its message and every rank stops.
      record.non_finite = !std::isfinite(sum);
      if (!record.non_finite) {
        const int64_t k = std::max<int64_t>(1, std::llround(static_cast<double>(density) * n));
        record.indices = TopKIndices(score.data(), n, k);
        if (!record.indices.empty()) {
          float smallest = score[record.indices[0]];
          for (int32_t i : record.indices) smallest = std::min(smallest, score[i]);
          record.threshold = smallest;
        }
      }
      AppendBlobIndexRecord(record, n, param_.index_encoding(), &message);
    }
  }
  stats_.AddTime(ExchangeStats::SELECT, PhaseSecondsSince(start));

  start = std::chrono::steady_clock::now();
  BroadcastMessage(&message, leader);
  vector<Selection> selections(m);
  vector<float> thresholds(m, 0.f);
  vector<int64_t> index_bytes(m, 0);
  int64_t pos = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) {
      selections[b].all = true;
      continue;
    }
    BlobIndexRecord record;
    index_bytes[b] =
        ReadBlobIndexRecord(message.data() + pos, static_cast<int64_t>(message.size()) - pos,
                            params[b]->count(), &record);
    pos += index_bytes[b];
    if (record.non_finite) {
      ErrorBuilder() << "sync (SCALECOM): iteration " << iter << ": the filtered residual of blob '"
                     << BlobName(b) << "' on rank " << leader
                     << " (the leader) is not finite: NaN or "
                     << "Inf in its accumulated gradient (lower base_lr, or set clip_gradients or "
                     << "sync_param.clip_norm)";
    }
    selections[b].indices = std::move(record.indices);
    thresholds[b] = record.threshold;
  }
  CAFFE_REQUIRE(pos == static_cast<int64_t>(message.size()))
      << "index message from rank " << leader << " has " << message.size() - pos
      << " trailing bytes";
  stats_.AddTime(ExchangeStats::BROADCAST, PhaseSecondsSince(start));

  const int64_t sent = ReduceSelected(params, selections);
  for (size_t b = 0; b < m; ++b) {
    if (!IsDenseBlob(b)) {
      for (int32_t i : selections[b].indices) filtered_[b][i] = 0.f;
    }
    BlobSelection s;
    s.name = BlobName(b);
    s.elements = params[b]->count();
    s.sent = selections[b].all ? s.elements : static_cast<int64_t>(selections[b].indices.size());
    s.threshold = thresholds[b];
    s.leader = IsDenseBlob(b) ? -1 : leader;
    s.index_bytes = index_bytes[b];
    stats_.AddBlob(s);
  }
  return sent;
}

std::string ScaleComExchange::SaveMethodState() const {
  std::string out;
  AppendFloatArrays(filtered_, &out);
  return out;
}

void ScaleComExchange::RestoreMethodState(const std::string& state) {
  filtered_.clear();
  if (state.empty()) return;
  size_t pos = 0;
  filtered_ = ReadFloatArrays(state, &pos, "sync state: SCALECOM section");
  CAFFE_REQUIRE(pos == state.size()) << "sync state: SCALECOM section has trailing bytes";
}

REGISTER_EXCHANGE(SCALECOM, ScaleComExchange);

}  // namespace caffe
