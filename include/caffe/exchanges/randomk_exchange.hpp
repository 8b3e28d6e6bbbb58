// Baseline: each step a random k of every sparse blob's coordinates, drawn from a
// seed all ranks share (so no indices travel), is all-reduced; the rest stays in the
// residual. IWP's values at equal density, without its index message or importance.
#ifndef CAFFE_EXCHANGES_RANDOMK_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_RANDOMK_EXCHANGE_HPP_

#include "caffe/exchanges/residual_exchange.hpp"

namespace caffe {

class RandomkExchange : public ResidualExchange {
 public:
  using ResidualExchange::ResidualExchange;
  const char* method_name() const override { return "RANDOMK"; }

 protected:
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  // Only ReduceSelected touches the residuals: works on device residuals.
  bool SupportsDeviceResiduals() const override { return true; }
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_RANDOMK_EXCHANGE_HPP_
