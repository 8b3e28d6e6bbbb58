#include "caffe/exchanges/topk_allgather_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/half_precision.hpp"

namespace caffe {

vector<int64_t> TopkAllgatherExchange::BlockSizes(const vector<Blob*>& params, float density,
                                                  int64_t* total) const {
  // k per blob depends only on sizes and density, so every rank knows every block's
  // size and a fixed-size all-gather suffices.
  vector<int64_t> k(params.size(), 0);
  *total = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    if (IsDenseBlob(b)) continue;
    k[b] = std::max<int64_t>(1, static_cast<int64_t>(std::llround(density * params[b]->count())));
    *total += k[b];
  }
  return k;
}

void TopkAllgatherExchange::RecordBlobs(const vector<Blob*>& params, const vector<int64_t>& k) {
  for (size_t b = 0; b < params.size(); ++b) {
    const bool dense = IsDenseBlob(b);
    BlobSelection s;
    s.name = BlobName(b);
    s.elements = params[b]->count();
    s.sent = dense ? s.elements : k[b];
    s.leader = -1;
    s.index_bytes = dense ? 0 : 4 * k[b];
    stats_.AddBlob(s);
  }
}

int64_t TopkAllgatherExchange::ExchangeSparse(int iter, const vector<Blob*>& params,
                                              float density) {
  ResidualKernels& kernels = residual_kernels();
  const size_t m = params.size();
  const int n_ranks = comm_->size();
  auto start = std::chrono::steady_clock::now();
  int64_t k_total = 0;
  const vector<int64_t> k = BlockSizes(params, density, &k_total);
  // This rank's block: all values, then all indices, blob after blob. The selection
  // writes the indices straight into it. FP16 values (host kernels then) take 2 bytes,
  // padded to 4 so that the indices stay aligned; they are gathered in float first.
  const bool half = param_.value_encoding() == SyncParameter::FP16 && n_ranks > 1;
  const int64_t value_bytes = half ? (2 * k_total + 3) / 4 * 4 : 4 * k_total;
  const int64_t block_bytes = value_bytes + 4 * k_total;
  if (!send_) {
    send_ = kernels.NewBuffer();
    receive_ = kernels.NewBuffer();
  }
  send_->Reserve(block_bytes);
  if (half) float_values_.resize(k_total);
  float* values = half ? float_values_.data() : send_->as<float>();
  int32_t* indices = reinterpret_cast<int32_t*>(send_->as<char>() + value_bytes);
  vector<Selection> dense(m);
  int64_t offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) {
      dense[b].all = true;
      continue;
    }
    const int64_t picked = kernels.SelectLargest(b, k[b], indices + offset);
    CHECK_EQ(picked, k[b]) << "blob " << b << " has fewer elements than its k";
    offset += k[b];
  }
  stats_.AddTime(ExchangeStats::SELECT, PhaseSecondsSince(start));

  start = std::chrono::steady_clock::now();
  offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (dense[b].all) continue;
    kernels.Gather(b, indices + offset, k[b], values + offset);
    offset += k[b];
  }
  if (half) {
    // What the rounding takes off goes back into this rank's residual below.
    uint16_t* wire = send_->as<uint16_t>();
    rounding_.resize(k_total);
    for (int64_t j = 0; j < k_total; ++j) {
      wire[j] = FloatToHalf(values[j]);
      rounding_[j] = values[j] - HalfToFloat(wire[j]);
    }
  }
  stats_.AddTime(ExchangeStats::GATHER, PhaseSecondsSince(start));

  // Small blobs travel densely by all-reduce (this also zeroes the sparse blobs'
  // diffs, which the gathered selections then fill).
  const int64_t dense_sent = ReduceSelected(params, dense);

  start = std::chrono::steady_clock::now();
  receive_->Reserve(block_bytes * n_ranks);
  AllGatherBytes(send_->data(), block_bytes, receive_->data());
  stats_.AddTime(ExchangeStats::ALLGATHER, PhaseSecondsSince(start));

  start = std::chrono::steady_clock::now();
  const float inv = 1.f / n_ranks;
  for (int r = 0; r < n_ranks; ++r) {
    const char* block = receive_->as<char>() + r * block_bytes;
    const float* vals = reinterpret_cast<const float*>(block);
    if (half) {
      const uint16_t* wire = reinterpret_cast<const uint16_t*>(block);
      for (int64_t j = 0; j < k_total; ++j) float_values_[j] = HalfToFloat(wire[j]);
      vals = float_values_.data();
    }
    const int32_t* idx = reinterpret_cast<const int32_t*>(block + value_bytes);
    offset = 0;
    for (size_t b = 0; b < m; ++b) {
      if (dense[b].all) continue;
      kernels.ScatterAdd(vals + offset, idx + offset, k[b], inv, params[b]);
      offset += k[b];
    }
  }
  offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (dense[b].all) continue;
    kernels.ClearAt(b, indices + offset, k[b], iter);
    if (half) {
      ResidualSelection sent;
      sent.indices.assign(indices + offset, indices + offset + k[b]);
      kernels.AddSelected(b, sent, rounding_.data() + offset);
    }
    offset += k[b];
  }
  stats_.AddTime(ExchangeStats::SCATTER, PhaseSecondsSince(start));

  RecordBlobs(params, k);
  return k_total + dense_sent;
}

REGISTER_EXCHANGE(TOPK_ALLGATHER, TopkAllgatherExchange);

}  // namespace caffe
