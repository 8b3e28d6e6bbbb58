// Importance-weighted pruning (DESIGN.md section 4, steps 4-10) and its
// fixed-threshold baseline. On top of ResidualExchange's clip-and-accumulate:
//   importance I = |v| / (|w| + epsilon);
//   each sparse blob gets a share of the global budget density * sum(n) that grows
//   with the variance-to-mean ratio D of its importances: k_l ~ n_l (D_l / mean D)^g
//   (layer_wise), or one global threshold over all blobs (layer_wise: false), or,
//   for FIXED_THRESHOLD, every element with I >= fixed_threshold;
//   a leader r_t = hash(seed, t) mod N, the same on every rank without a message,
//   chooses the index set; it is broadcast (offsets or bitmap, whichever is smaller);
//   every rank gathers v at those indices and one all-reduce sums them; optionally a
//   shared-seed random set of extra indices joins, so nothing stays stale forever.
// The all-reduce carries k values whatever N is: the traffic per rank does not grow
// with the number of ranks, unlike an all-gather of per-rank selections.
#ifndef CAFFE_SYNC_IWP_EXCHANGE_HPP_
#define CAFFE_SYNC_IWP_EXCHANGE_HPP_

#include <memory>
#include <string>
#include <vector>

#include "caffe/sync/residual_exchange.hpp"
#include "caffe/sync/selection_kernels.hpp"

namespace caffe {

class IwpExchange : public ResidualExchange {
 public:
  using ResidualExchange::ResidualExchange;
  const char* method_name() const override {
    return param_.method() == SyncParameter::FIXED_THRESHOLD ? "FIXED_THRESHOLD" : "IWP";
  }

  // Per-blob element budgets for importance statistics (exposed for tests): sizes n,
  // VMRs D, total budget k; returns k_l with sum k_l = k (up to clamping to [1, n_l]).
  static vector<int64_t> SplitBudget(const vector<int64_t>& sizes, const vector<double>& vmr,
                                     int64_t budget, double exponent);
  // The indices of the k largest importances, ties broken by lower index first.
  static vector<int32_t> SelectTopK(const float* importance, int64_t n, int64_t k);

 protected:
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  // Selection through Kernels(), values through ReduceSelected: works on device residuals.
  bool SupportsDeviceResiduals() const override { return true; }

 private:
  struct BlobChoice {
    vector<int32_t> indices;
    float threshold = 0;
    float vmr = 0;
  };
  // The leader's work: importance, budget, threshold and index set for `mine` blobs.
  // The algorithm; the primitives it calls run on the CPU or the GPU (Kernels()).
  void ChooseIndices(int iter, const vector<Blob*>& params, float density,
                     const vector<bool>& mine, vector<BlobChoice>* choices);
  // The device kernels when the residuals live on the device (GPU mode with a
  // device), else the host ones.
  SelectionKernels& Kernels();

  std::unique_ptr<SelectionKernels> host_kernels_, device_kernels_;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_IWP_EXCHANGE_HPP_
