#include "caffe/sync/dense_exchange.hpp"

#include <algorithm>
#include <chrono>

#include "caffe/util/math_functions.hpp"

namespace caffe {

void DenseExchange::Exchange(int iter, const vector<Blob*>& params) {
  stats_.BeginStep(iter);
  const int64_t bytes_before = BytesSentSoFar();
  const int n = comm_->size();
  const int64_t bucket_elements = std::max<int64_t>(
      1, static_cast<int64_t>(param_.bucket_size_mb() * 1024 * 1024 / sizeof(float)));
  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  if (n > 1) {
    bucket_.resize(std::min(bucket_elements, std::max<int64_t>(total, 1)));
    const float inv = 1.f / n;
    // Walk the parameters from last to first: the order backward produces them, so
    // that on the device a bucket can start while earlier layers still compute.
    size_t p = params.size();
    int64_t offset_in_param = 0;
    while (p > 0) {
      // Fill one bucket with whole or partial parameters.
      int64_t filled = 0;
      struct Piece { Blob* blob; int64_t start; int64_t len; };
      vector<Piece> pieces;
      size_t q = p;
      int64_t off = offset_in_param;
      while (q > 0 && filled < static_cast<int64_t>(bucket_.size())) {
        Blob* blob = params[q - 1];
        const int64_t take = std::min(blob->count() - off, static_cast<int64_t>(bucket_.size()) - filled);
        if (take > 0) {
          math::copy(take, blob->cpu_diff() + off, bucket_.data() + filled);
          pieces.push_back({blob, off, take});
          filled += take;
        }
        off += take;
        if (off >= blob->count()) {
          --q;
          off = 0;
        }
      }
      const auto start = std::chrono::steady_clock::now();
      comm_->AllReduceSum(bucket_.data(), filled);
      stats_.AddTime(ExchangeStats::ALLREDUCE,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      int64_t pos = 0;
      for (const Piece& piece : pieces) {
        float* diff = piece.blob->mutable_cpu_diff() + piece.start;
        for (int64_t i = 0; i < piece.len; ++i) diff[i] = bucket_[pos + i] * inv;
        pos += piece.len;
      }
      p = q;
      offset_in_param = off;
    }
  }
  stats_.EndStep(total, total, BytesSentSoFar() - bytes_before, DenseRingBytes(total), 1.f);
}

}  // namespace caffe
