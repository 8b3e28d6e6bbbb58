// ScaleCom's cyclic local top-k (Chen et al., NeurIPS 2020) on ResidualExchange's
// residuals. The leader of step t is rank (t + seed) mod N, so the choice goes round
// the ranks in turn. It ranks each sparse blob's coordinates by |f|, a low-pass filter
// of its own residual v,
//   f = (1 - beta) f + beta v    (every sparse step, after the gradient joins v),
// takes each blob's density x n largest, and sends them in IWP's index message; one
// all-reduce sums v there on every rank, and v and f are cleared where sent.
// The filter damps the step-to-step noise of the leader's residual, so that its
// choice leans to what persists, which the other ranks are likely to hold too.
// The paper filters the memory itself (what is not sent is kept at weight beta);
// here v stays whole and the filter only decides, so nothing is lost: the exchange
// keeps the conservation invariant of every residual method. beta = 1 is plain
// cyclic local top-k. The state stays on the host (GPU mode moves v over PCIe).
#ifndef CAFFE_EXCHANGES_SCALECOM_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_SCALECOM_EXCHANGE_HPP_

#include <string>
#include <vector>

#include "caffe/exchanges/residual_exchange.hpp"

namespace caffe {

class ScaleComExchange : public ResidualExchange {
 public:
  using ResidualExchange::ResidualExchange;
  const char* method_name() const override { return "SCALECOM"; }

  // The leader of step `iter`: every rank in turn, starting from seed mod N.
  static int LeaderAt(uint64_t seed, int64_t iter, int world_size);
  // The filtered residual of blob b (tests).
  const vector<float>& filtered(size_t b) const { return filtered_[b]; }

 protected:
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  std::string SaveMethodState() const override;
  void RestoreMethodState(const std::string& state) override;

 private:
  // f of every blob (empty for the blobs sent whole until the first sparse step).
  vector<vector<float>> filtered_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_SCALECOM_EXCHANGE_HPP_
