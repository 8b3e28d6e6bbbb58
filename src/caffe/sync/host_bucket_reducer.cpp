#include <chrono>

#include "caffe/sync/bucket_reducer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void HostBucketReducer::Start(const Bucket& bucket, const std::vector<Blob*>& params) {
  if (bucket.elements == 0) return;
  buffer_.resize(bucket.elements);
  int64_t pos = 0;
  for (const BucketPiece& piece : bucket.pieces) {
    const float* diff = params[piece.param]->cpu_diff() + piece.start;
    if (carry_) {
      math::add(piece.length, diff, (*carry_)[piece.param].data() + piece.start, buffer_.data() + pos);
    } else {
      math::copy(piece.length, diff, buffer_.data() + pos);
    }
    pos += piece.length;
  }
  const auto start = std::chrono::steady_clock::now();
  if (carry_) {
    rounding_.assign(bucket.elements, 0.f);
    comm_->AllReduceSumHalf(buffer_.data(), bucket.elements, rounding_.data());
  } else {
    comm_->AllReduceSum(buffer_.data(), bucket.elements);
  }
  stats_->AddTime(ExchangeStats::ALLREDUCE,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const float inv = 1.f / comm_->size();
  pos = 0;
  for (const BucketPiece& piece : bucket.pieces) {
    float* diff = params[piece.param]->mutable_cpu_diff() + piece.start;
    for (int64_t i = 0; i < piece.length; ++i) diff[i] = buffer_[pos + i] * inv;
    if (carry_) {
      math::copy(piece.length, rounding_.data() + pos, (*carry_)[piece.param].data() + piece.start);
    }
    pos += piece.length;
  }
}

}  // namespace caffe

#ifndef USE_CUDA
namespace caffe {
// Without CUDA there is no device path: the DENSE exchange reduces on the host.
std::unique_ptr<BucketReducer> CreateDeviceBucketReducer(Communicator*, Communicator*,
                                                         ExchangeStats*) {
  return nullptr;
}
}  // namespace caffe
#endif
