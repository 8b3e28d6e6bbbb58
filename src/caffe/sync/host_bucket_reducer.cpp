#include <chrono>

#include "caffe/sync/bucket_reducer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void HostBucketReducer::Start(const Bucket& bucket, const std::vector<Blob*>& params) {
  if (bucket.elements == 0) return;
  if (buffers_.size() <= started_) {
    buffers_.resize(started_ + 1);
    roundings_.resize(started_ + 1);
  }
  std::vector<float>* buffer = &buffers_[started_];
  std::vector<float>* rounding = &roundings_[started_];
  ++started_;
  buffer->resize(bucket.elements);
  int64_t pos = 0;
  for (const BucketPiece& piece : bucket.pieces) {
    const float* diff = params[piece.param]->cpu_diff() + piece.start;
    if (carry_) {
      math::add(piece.length, diff, (*carry_)[piece.param].data() + piece.start, buffer->data() + pos);
    } else {
      math::copy(piece.length, diff, buffer->data() + pos);
    }
    pos += piece.length;
  }
  if (background_ == nullptr) {
    ReduceAndUnpack(bucket, params, buffer, rounding);
    return;
  }
  // The bucket's diffs are final (backward will not touch them again this step), and
  // the buffers stay put until Finish: the thread may take its time.
  background_->Post([this, &bucket, params, buffer, rounding] {
    ReduceAndUnpack(bucket, params, buffer, rounding);
  });
}

void HostBucketReducer::ReduceAndUnpack(const Bucket& bucket, const std::vector<Blob*>& params,
                                        std::vector<float>* buffer, std::vector<float>* rounding) {
  const auto start = std::chrono::steady_clock::now();
  if (carry_) {
    rounding->assign(bucket.elements, 0.f);
    comm_->AllReduceSumHalf(buffer->data(), bucket.elements, rounding->data());
  } else {
    comm_->AllReduceSum(buffer->data(), bucket.elements);
  }
  stats_->AddTime(ExchangeStats::ALLREDUCE,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const float inv = 1.f / comm_->size();
  int64_t pos = 0;
  for (const BucketPiece& piece : bucket.pieces) {
    float* diff = params[piece.param]->mutable_cpu_diff() + piece.start;
    for (int64_t i = 0; i < piece.length; ++i) diff[i] = (*buffer)[pos + i] * inv;
    if (carry_) {
      math::copy(piece.length, rounding->data() + pos, (*carry_)[piece.param].data() + piece.start);
    }
    pos += piece.length;
  }
}

void HostBucketReducer::Finish() {
  started_ = 0;
  if (background_ == nullptr) return;
  const auto start = std::chrono::steady_clock::now();
  background_->Drain();
  stats_->AddTime(ExchangeStats::WAIT,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
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
