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
//
// value_encoding FP16 (Horovod's fp16 compression, with error feedback): the buckets
// travel in half precision over the host communicator, and what the roundings take
// off this rank's values (the carry) goes with its next step's gradients, so nothing
// is lost: N x (sum of applied) + (sum of carries) = (sum of local gradients). The
// carry is saved in snapshots (SaveState), so resume stays exact.
#ifndef CAFFE_EXCHANGES_DENSE_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_DENSE_EXCHANGE_HPP_

#include <memory>
#include <string>

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
  std::string SaveState() const override;
  void RestoreState(const std::string& state) override;
  // FP16: what waits of parameter b's gradient (tests).
  const vector<float>& carry(size_t b) const { return carry_[b]; }

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
  // FP16 only: per parameter, what the roundings took off this rank's values.
  vector<vector<float>> carry_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_DENSE_EXCHANGE_HPP_
