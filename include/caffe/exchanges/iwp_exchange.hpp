// Importance-weighted pruning (docs/design.md section 4, steps 4-10) and its
// fixed-threshold baseline. On top of ResidualExchange's clip-and-accumulate:
//   importance I = |v| / (|w| + epsilon) (score: MAGNITUDE drops the denominator);
//   each sparse blob gets a share of the global budget density * sum(n) that grows
//   with the variance-to-mean ratio D of its importances: k_l ~ n_l (D_l / mean D)^g
//   (layer_wise), or one global threshold over all blobs (layer_wise: false), or,
//   for FIXED_THRESHOLD, every element with I >= fixed_threshold;
//   a leader r_t = hash(seed, t) mod N, the same on every rank without a message,
//   chooses the index set; it is broadcast (offsets, bitmap or varint gaps, whichever
//   is smallest); every rank gathers v at those indices and one all-reduce sums them;
//   the stochastic update (stochastic_fraction) first gives part of the budget to a
//   draw from the shared seed that favours old and once-important coordinates, so
//   nothing stays stale; the leader's choice fills the rest.
// The all-reduce carries k values whatever N is: the traffic per rank does not grow
// with the number of ranks, unlike an all-gather of per-rank selections.
#ifndef CAFFE_EXCHANGES_IWP_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_IWP_EXCHANGE_HPP_

#include <memory>
#include <string>
#include <vector>

#include "caffe/exchanges/residual_exchange.hpp"
#include "caffe/sync/index_codec.hpp"
#include "caffe/sync/selection_kernels.hpp"

namespace caffe {

class IwpExchange : public ResidualExchange {
 public:
  IwpExchange(const SyncParameter& param, Transport transport);
  const char* method_name() const override {
    return param_.method() == SyncParameter::FIXED_THRESHOLD ? "FIXED_THRESHOLD" : "IWP";
  }

  // Per-blob element budgets for importance statistics (exposed for tests): sizes n,
  // VMRs D, total budget k; returns k_l with sum k_l = k (up to clamping to [1, n_l]).
  static vector<int64_t> SplitBudget(const vector<int64_t>& sizes, const vector<double>& vmr,
                                     int64_t budget, double exponent);

 protected:
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  // Selection through Kernels(), values through ReduceSelected: works on device residuals.
  bool SupportsDeviceResiduals() const override { return true; }
  std::string SaveMethodState() const override;
  void RestoreMethodState(const std::string& state) override;
  // A bucket at a time, where the budgets are known before backward (not PER_STEP).
  bool OverlapsBuckets() const override;
  void PlanSparseStep(int iter, const vector<Blob*>& params, float density) override;
  void ChooseBucket(const SparseBucket& bucket, const vector<Blob*>& params) override;
  void AgreeOnBucket(const SparseBucket& bucket, const vector<Blob*>& params) override;
  void FinishSparseStep(const vector<Blob*>& params) override;

 private:
  // One sparse step's plan (PlanSparseStep, before any selection) and what its stages
  // leave for the next (per blob, so that buckets fill their own entries).
  struct StepPlan {
    vector<int> leader;               // the blob's leader, -1 for EVERY_RANK
    vector<bool> mine;                // this rank chooses (part of) the blob
    vector<vector<size_t>> led;       // per rank, the sparse blobs it chooses for
    vector<size_t> sparse;            // the sparse blobs, in order
    vector<vector<int32_t>> drawn;    // the stochastic update's draw
    int64_t leader_budget = 0;        // the leaders' budget (PER_STEP's split)
    vector<int64_t> shared_budgets;   // per blob, this rank's budget (empty: PER_STEP)
    vector<BlobIndexRecord> choices;  // this rank's records
    vector<float> thresholds, vmrs;
    vector<double> overlap;  // EVERY_RANK: union over picks
    vector<int64_t> index_bytes;
  };
  // This rank's choice for the listed blobs it leads (into plan_.choices).
  void ChooseFor(const vector<size_t>& blobs, const vector<Blob*>& params);
  // The leaders' records of the listed blobs broadcast, and merged into their
  // selections (step_selections()), thresholds, VMRs and overlaps.
  void AgreeFor(const vector<size_t>& blobs, const vector<Blob*>& params);
  // The leader's work for the blobs it leads (`mine`): importance, its VMR, the
  // budget split of `budget` elements (or `shared_budgets`, per blob, when the split
  // was made on every rank), thresholds and index sets, passing over the `drawn`
  // coordinates of the stochastic update. The algorithm; the primitives it calls run
  // on the CPU or the GPU (Kernels()).
  void ChooseIndices(int iter, const vector<Blob*>& params, int64_t budget,
                     const vector<int64_t>& shared_budgets, const vector<bool>& mine,
                     const vector<vector<int32_t>>& drawn, vector<BlobIndexRecord>* choices);
  // The index broadcast: rank r's records for the blobs led[r] (this rank's are
  // `mine`) reach every rank, as records[r][b]. *record_bytes gets each blob's
  // bytes over all messages. Throws on every rank alike when a leader reported a
  // non-finite importance.
  vector<vector<BlobIndexRecord>> BroadcastChoices(int iter, const vector<Blob*>& params,
                                                   const vector<vector<size_t>>& led,
                                                   const vector<BlobIndexRecord>& mine,
                                                   vector<int64_t>* record_bytes);
  // The device kernels when the residuals live on the device (GPU mode with a
  // device), else the host ones.
  SelectionKernels& Kernels();

  std::unique_ptr<SelectionKernels> host_kernels_, device_kernels_;
  // PER_LAYER and EVERY_RANK: each sparse blob's VMR from the last step's messages,
  // the same on every rank (empty before the first sparse step: the split is then
  // by size). EVERY_RANK: each sparse blob's union size over the ranks' picks then.
  vector<double> last_vmr_;
  vector<double> last_overlap_;
  StepPlan plan_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_IWP_EXCHANGE_HPP_
