// The baseline: every gradient element travels. Diffs are fused into buckets of
// bucket_size_mb (fewer, larger all-reduces amortise latency), summed by ring
// all-reduce, and divided by the number of ranks.
//
// When the solver reports backward's progress (BeginBackward / OnLayerBackward), a
// bucket is reduced as soon as backward has produced all of its gradients, last
// layers first (BucketPlan). On the device this overlaps communication with the rest
// of backward (DeviceBucketReducer, NCCL on its own stream); on the host the
// reduction is synchronous and the early start changes the order of work only, not
// the result: the buckets and their sums are the same either way.
#ifndef CAFFE_SYNC_DENSE_EXCHANGE_HPP_
#define CAFFE_SYNC_DENSE_EXCHANGE_HPP_

#include <memory>

#include "caffe/sync/bucket_plan.hpp"
#include "caffe/sync/bucket_reducer.hpp"
#include "caffe/sync/gradient_exchange.hpp"

namespace caffe {

class DenseExchange : public GradientExchange {
 public:
  using GradientExchange::GradientExchange;
  void BeginBackward(int iter, const vector<Blob*>& params) override;
  void OnLayerBackward(int layer) override;
  void Exchange(int iter, const vector<Blob*>& params) override;
  const char* method_name() const override { return "DENSE"; }

  const BucketPlan& plan() const { return plan_; }
  // Buckets started before backward finished, over all steps (the overlap).
  int64_t buckets_started_early() const { return buckets_started_early_; }

 private:
  // Builds the plan and picks the reducer on first use (and if the sizes change).
  void Prepare(const vector<Blob*>& params);
  void StartReadyBuckets(int count);

  BucketPlan plan_;
  std::unique_ptr<BucketReducer> reducer_;
  vector<Blob*> params_;
  bool in_step_ = false;
  int started_ = 0;
  int64_t bytes_before_ = 0;
  int64_t buckets_started_early_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_DENSE_EXCHANGE_HPP_
