// The baseline: every gradient element travels. Diffs are fused into buckets of
// bucket_size_mb (fewer, larger all-reduces amortise latency), summed by ring
// all-reduce, and divided by the number of ranks.
#ifndef CAFFE_SYNC_DENSE_EXCHANGE_HPP_
#define CAFFE_SYNC_DENSE_EXCHANGE_HPP_

#include "caffe/sync/gradient_exchange.hpp"

namespace caffe {

class DenseExchange : public GradientExchange {
 public:
  using GradientExchange::GradientExchange;
  void Exchange(int iter, const vector<Blob*>& params) override;
  const char* method_name() const override { return "DENSE"; }

 private:
  vector<float> bucket_;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_DENSE_EXCHANGE_HPP_
