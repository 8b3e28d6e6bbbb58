#include "caffe/sync/topk_allgather_exchange.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

#include "caffe/sync/top_k.hpp"

namespace caffe {

namespace {
double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

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
    s.name = b < param_names_.size() ? param_names_[b] : std::to_string(b);
    s.elements = params[b]->count();
    s.sent = dense ? s.elements : k[b];
    s.leader = -1;
    s.index_bytes = dense ? 0 : 4 * k[b];
    stats_.AddBlob(s);
  }
}

int64_t TopkAllgatherExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float density) {
#ifdef USE_CUDA
  if (on_device()) return ExchangeSparseOnDevice(iter, params, density);
#endif
  const size_t m = params.size();
  const int n_ranks = comm_->size();
  auto start = std::chrono::steady_clock::now();
  int64_t k_total = 0;
  const vector<int64_t> k = BlockSizes(params, density, &k_total);
  vector<Selection> dense(m);
  vector<vector<int32_t>> chosen(m);
  vector<float> magnitude;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) {
      dense[b].all = true;
      continue;
    }
    const int64_t n = params[b]->count();
    magnitude.resize(n);
    const float* v = residual_[b].data();
    for (int64_t i = 0; i < n; ++i) magnitude[i] = std::fabs(v[i]);
    chosen[b] = TopKIndices(magnitude.data(), n, k[b]);
  }
  stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));

  start = std::chrono::steady_clock::now();
  // This rank's block: all values, then all indices.
  const int64_t block_bytes = 8 * k_total;
  send_.resize(block_bytes);
  float* values = reinterpret_cast<float*>(send_.data());
  int32_t* indices = reinterpret_cast<int32_t*>(send_.data() + 4 * k_total);
  int64_t pos = 0;
  for (size_t b = 0; b < m; ++b) {
    for (int32_t i : chosen[b]) {
      values[pos] = residual_[b][i];
      indices[pos] = i;
      ++pos;
    }
  }
  stats_.AddTime(ExchangeStats::GATHER, SecondsSince(start));

  // Small blobs travel densely by all-reduce (this also zeroes the sparse blobs'
  // diffs, which the gathered selections then fill).
  const int64_t dense_sent = ReduceSelected(params, dense);

  start = std::chrono::steady_clock::now();
  receive_.resize(block_bytes * n_ranks);
  if (n_ranks > 1) {
    comm_->AllGatherBytes(send_.data(), block_bytes, receive_.data());
  } else {
    std::memcpy(receive_.data(), send_.data(), block_bytes);
  }
  stats_.AddTime(ExchangeStats::ALLGATHER, SecondsSince(start));

  start = std::chrono::steady_clock::now();
  const float inv = 1.f / n_ranks;
  for (int r = 0; r < n_ranks; ++r) {
    const char* block = receive_.data() + r * block_bytes;
    const float* vals = reinterpret_cast<const float*>(block);
    const int32_t* idx = reinterpret_cast<const int32_t*>(block + 4 * k_total);
    int64_t offset = 0;
    for (size_t b = 0; b < m; ++b) {
      if (dense[b].all) continue;
      float* diff = params[b]->mutable_cpu_diff();
      for (int64_t j = 0; j < k[b]; ++j) diff[idx[offset + j]] += vals[offset + j] * inv;
      offset += k[b];
    }
  }
  for (size_t b = 0; b < m; ++b) {
    if (!dense[b].all) ClearSent(b, chosen[b]);
  }
  stats_.AddTime(ExchangeStats::SCATTER, SecondsSince(start));

  RecordBlobs(params, k);
  (void)iter;
  return k_total + dense_sent;
}

}  // namespace caffe
