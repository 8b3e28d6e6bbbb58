#include "caffe/sync/dense_exchange.hpp"

#include <algorithm>

#include <glog/logging.h>

#include "caffe/util/error.hpp"

namespace caffe {

void DenseExchange::Prepare(const vector<Blob*>& params) {
  vector<int64_t> sizes;
  for (Blob* p : params) sizes.push_back(p->count());
  if (!plan_.Matches(sizes)) {
    const int64_t capacity = std::max<int64_t>(
        1, static_cast<int64_t>(param_.bucket_size_mb() * 1024 * 1024 / sizeof(float)));
    const bool ready_known = param_ready_layers_.size() == sizes.size();
    plan_ = BucketPlan(sizes, ready_known ? param_ready_layers_ : vector<int>(), capacity);
  }
  if (!reducer_) {
    if (gpu_mode_ && device_comm_) {
      reducer_ = CreateDeviceBucketReducer(device_comm_.get(), comm_.get(), &stats_);
    }
    if (!reducer_) reducer_ = std::make_unique<HostBucketReducer>(comm_.get(), &stats_);
  }
}

void DenseExchange::BeginBackward(int iter, const vector<Blob*>& params) {
  if (comm_->size() < 2) return;
  Prepare(params);
  params_ = params;
  stats_.BeginStep(iter);
  bytes_before_ = BytesSentSoFar();
  started_ = 0;
  in_step_ = true;
}

void DenseExchange::OnLayerBackward(int layer) {
  if (!in_step_) return;
  const int ready = plan_.ReadyCount(layer);
  if (ready > started_) {
    buckets_started_early_ += ready - started_;
    StartReadyBuckets(ready);
  }
}

void DenseExchange::StartReadyBuckets(int count) {
  while (started_ < count) reducer_->Start(plan_.buckets()[started_++], params_);
}

void DenseExchange::Exchange(int iter, const vector<Blob*>& params) {
  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  if (comm_->size() < 2) {
    stats_.BeginStep(iter);
    stats_.EndStep(total, total, 0, DenseRingBytes(total), 1.f);
    return;
  }
  if (!in_step_) BeginBackward(iter, params);  // no early start: reduce everything now
  CHECK(params == params_) << "DENSE exchange: parameters changed within a step";
  StartReadyBuckets(static_cast<int>(plan_.buckets().size()));
  reducer_->Finish();
  in_step_ = false;
  stats_.EndStep(total, total, BytesSentSoFar() - bytes_before_, DenseRingBytes(total), 1.f);
}

}  // namespace caffe
