// The DGC-style baseline: every rank picks its own top-k of |v| per blob (after the
// shared clip / momentum-correction / residual steps), all ranks all-gather values
// and indices, and each sums what it received. Every rank receives N selections, so
// the traffic per rank grows with N; comparing that growth with IWP's flat all-reduce
// is the point of this method. The step is written once against the residual kernels
// (host or device, residual_kernels.hpp). With value_encoding FP16 the values travel
// as halves and each rank's rounding stays in its residual.
#ifndef CAFFE_EXCHANGES_TOPK_ALLGATHER_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_TOPK_ALLGATHER_EXCHANGE_HPP_

#include <memory>

#include "caffe/exchanges/residual_exchange.hpp"

namespace caffe {

class TopkAllgatherExchange : public ResidualExchange {
 public:
  using ResidualExchange::ResidualExchange;
  const char* method_name() const override { return "TOPK_ALLGATHER"; }

 protected:
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  // Only ReduceSelected and the residual kernels touch the residuals.
  bool SupportsDeviceResiduals() const override { return true; }

 private:
  // k per sparse blob (0 for the dense ones) and their sum, the same on every rank.
  vector<int64_t> BlockSizes(const vector<Blob*>& params, float density, int64_t* total) const;
  void RecordBlobs(const vector<Blob*>& params, const vector<int64_t>& k);

  // This rank's block and every rank's, in the residual kernels' memory.
  std::unique_ptr<KernelBuffer> send_, receive_;
  // FP16: the values in float (sent, then each rank's received) and what rounding
  // took off this rank's.
  vector<float> float_values_, rounding_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_TOPK_ALLGATHER_EXCHANGE_HPP_
