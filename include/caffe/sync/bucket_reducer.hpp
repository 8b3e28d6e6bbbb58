// Averages one bucket of gradients over all ranks, in place in the parameter diffs:
// pack the bucket's pieces, sum them by ring all-reduce, divide by N, unpack.
//
// HostBucketReducer does it on host memory through the exchange's Communicator (MPI
// or local): with a CommThread, Start packs the bucket and posts its all-reduce and
// unpacking to that thread, so that they run while backward goes on; without one,
// synchronously. DeviceBucketReducer (USE_NCCL builds, GPU mode) does it on
// device memory with NCCL on a stream of its own: Start only enqueues, after an event
// that orders it behind the backward kernels already queued, so the all-reduce of one
// bucket overlaps the backward of the layers below it; Finish waits.
#ifndef CAFFE_SYNC_BUCKET_REDUCER_HPP_
#define CAFFE_SYNC_BUCKET_REDUCER_HPP_

#include <deque>
#include <memory>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/sync/bucket_plan.hpp"
#include "caffe/sync/comm_thread.hpp"
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
  // gradient goes with the carry added, and the carry becomes what the wire's roundings
  // took off this rank's values (SyncParameter.value_encoding FP16). With
  // `in_background` the all-reduces run on a CommThread of the reducer's own.
  HostBucketReducer(Communicator* comm, ExchangeStats* stats,
                    std::vector<std::vector<float>>* carry = nullptr, bool in_background = false)
      : comm_(comm), stats_(stats), carry_(carry),
        background_(in_background ? std::make_unique<CommThread>() : nullptr) {}
  void Start(const Bucket& bucket, const std::vector<Blob*>& params) override;
  // Waits for the buckets still on the wire; the wait is the step's exposed
  // communication (ExchangeStats::WAIT).
  void Finish() override;

 private:
  // Sums the packed bucket in `buffer` over the ranks and unpacks the mean into the
  // diffs (and the roundings into the carry).
  void ReduceAndUnpack(const Bucket& bucket, const std::vector<Blob*>& params,
                       std::vector<float>* buffer, std::vector<float>* rounding);

  Communicator* comm_;
  ExchangeStats* stats_;
  std::vector<std::vector<float>>* carry_;
  // One packed buffer (and rounding array) per bucket of the step: with a CommThread,
  // a bucket waits in its own while the next one is packed. A deque, so that growing it
  // moves none of the buffers the thread is still reading.
  std::deque<std::vector<float>> buffers_, roundings_;
  size_t started_ = 0;
  // Last, so that it is destroyed first: its queued work uses the members above.
  std::unique_ptr<CommThread> background_;
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
