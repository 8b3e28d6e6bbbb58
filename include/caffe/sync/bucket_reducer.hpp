// Averages one bucket of gradients over all ranks, in place in the parameter diffs:
// pack the bucket's pieces, sum them by ring all-reduce, divide by N, unpack.
//
// HostBucketReducer does it on host memory through the exchange's Communicator (MPI
// or local), synchronously. DeviceBucketReducer (USE_NCCL builds, GPU mode) does it on
// device memory with NCCL on a stream of its own: Start only enqueues, after an event
// that orders it behind the backward kernels already queued, so the all-reduce of one
// bucket overlaps the backward of the layers below it; Finish waits.
#ifndef CAFFE_SYNC_BUCKET_REDUCER_HPP_
#define CAFFE_SYNC_BUCKET_REDUCER_HPP_

#include <memory>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/sync/bucket_plan.hpp"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/exchange_stats.hpp"

namespace caffe {

class BucketReducer {
 public:
  virtual ~BucketReducer() = default;
  // Starts averaging `bucket` of `params`' diffs; may return before it is done.
  virtual void Start(const Bucket& bucket, const std::vector<Blob*>& params) = 0;
  // Returns once every started bucket is averaged and back in the diffs.
  virtual void Finish() = 0;
};

class HostBucketReducer : public BucketReducer {
 public:
  // `comm` and `stats` belong to the exchange and outlive the reducer. With `carry`
  // (one vector per parameter, of its size) the values travel in half precision: each
  // gradient goes with the carry added, and the carry becomes what the wire's
  // roundings took off this rank's values (SyncParameter.value_encoding FP16).
  HostBucketReducer(Communicator* comm, ExchangeStats* stats,
                    std::vector<std::vector<float>>* carry = nullptr)
      : comm_(comm), stats_(stats), carry_(carry) {}
  void Start(const Bucket& bucket, const std::vector<Blob*>& params) override;
  void Finish() override {}

 private:
  Communicator* comm_;
  ExchangeStats* stats_;
  std::vector<std::vector<float>>* carry_;
  std::vector<float> buffer_, rounding_;
};

// The reducer on device buffers over `device` (a communicator whose memory() is
// DEVICE) in a CUDA build, else nullptr (the host reducer applies). The bytes `device`
// sends are recorded in `control`'s counters (the exchange's host communicator), so
// the exchange's accounting stays in one place.
std::unique_ptr<BucketReducer> CreateDeviceBucketReducer(Communicator* device,
                                                         Communicator* control,
                                                         ExchangeStats* stats);

}  // namespace caffe

#endif  // CAFFE_SYNC_BUCKET_REDUCER_HPP_
