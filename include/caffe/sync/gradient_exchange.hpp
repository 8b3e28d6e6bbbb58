// The point between backward and update where ranks combine their gradients. The
// solver calls Exchange once per step with every learnable parameter; on entry the
// diffs hold this rank's local gradient, on return they hold the gradient every rank
// applies (identical on all ranks). Strategies see flat parameter and gradient
// buffers only, never layer types, and talk to other ranks only through the
// communicators of the Transport they are given. docs/design.md section 4 describes the
// methods.
#ifndef CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_
#define CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/exchange_stats.hpp"
#include "caffe/sync/solver_action.hpp"
#include "caffe/sync/transport.hpp"

namespace caffe {

// What the solver tells an exchange about the blobs it will combine, once, before the
// first Exchange. The exchange sees flat buffers, never the net; it plans from this.
struct ExchangedBlobs {
  // "conv1[0]": for logs, errors and the per-blob CSV.
  vector<string> names;
  // Element counts: the budget is planned, and a restored state checked, against them.
  vector<int64_t> sizes;
  // Learning-rate multipliers: with the step's rate (set_learning_rate), what a value
  // moves its weight, for the rate limit (sync_param.max_relative_step).
  vector<float> lr_mults;
  // The layer after whose backward each gradient is final
  // (Net::learnable_param_ready_layers): what may travel while backward goes on.
  vector<int> ready_layers;
  // Whether the diffs live on a GPU.
  bool gpu = false;
};

class GradientExchange {
 public:
  GradientExchange(const SyncParameter& param, Transport transport);
  virtual ~GradientExchange() = default;

  // The blobs Exchange will be given (see ExchangedBlobs); before the first step.
  void Describe(const ExchangedBlobs& blobs) { blobs_ = blobs; }
  // The solver offers its momentum; a strategy that applies momentum itself (DGC
  // momentum correction) takes it and returns true, and the solver then runs plain SGD.
  virtual bool TakeOverMomentum(float momentum) { return false; }
  // Whether the solver must give the step's learning rate before each Exchange (the
  // rate limit, sync_param.max_relative_step, needs it).
  bool wants_learning_rate() const { return param_.max_relative_step() > 0; }
  void set_learning_rate(float rate) { learning_rate_ = rate; }

  // The solver is about to run the backward pass of step `iter` whose gradients
  // Exchange will combine, and then reports each layer as backward finishes it; an
  // exchange may start on gradients that are already final (DENSE does). Exchange
  // must still be called and completes the step either way.
  virtual void BeginBackward(int iter, const vector<Blob*>& params) {}
  virtual void OnLayerBackward(int layer) {}

  // Rank 0's weights go to every rank (called once, before the first step): device
  // data over the device communicator in GPU mode when there is one, else host data.
  void BroadcastInitialWeights(const vector<Blob*>& params);
  // Collective: every rank's blobs become the mean over ranks (host data). For data
  // statistics such as BatchNorm's running sums; the bytes count in the stats.
  void AverageOverRanks(const vector<Blob*>& blobs);
  // Combine the local gradients of step `iter` (see the file comment).
  virtual void Exchange(int iter, const vector<Blob*>& params) = 0;
  // The strongest action any rank asks for (STOP over SNAPSHOT over NONE), so that
  // all ranks act on the same iteration.
  SolverAction AgreeOnAction(SolverAction local);

  // Per-rank state resume must restore (residuals, momenta), as bytes.
  virtual std::string SaveState() const { return {}; }
  virtual void RestoreState(const std::string& state) {}

  // The staleness of the sparsely sent coordinates now: the largest and the mean
  // number of steps since one was last sent (0 for methods that send everything).
  virtual void CurrentAge(int64_t* max_age, double* mean_age) const {
    *max_age = 0;
    *mean_age = 0;
  }

  // Accounting of the steps since the last ResetWindow (the display interval).
  const ExchangeStats& stats() const { return stats_; }
  void ResetWindow() { stats_.ResetWindow(); }
  // One line for the display interval: method, density, ratios, bytes, timings.
  std::string Summary() const;
  // Writes one CSV row per step and parameter blob to `path` (-sync_stats).
  void EnableStatsCsv(const std::string& path) { stats_.OpenCsv(path); }

  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->size(); }
  const SyncParameter& param() const { return param_; }
  Communicator& comm() { return *comm_; }
  virtual const char* method_name() const = 0;

 protected:
  // Bytes a dense ring all-reduce of `elements` floats would send from this rank.
  double DenseRingBytes(int64_t elements) const;
  // Bytes this rank has sent so far, all operations together.
  int64_t BytesSentSoFar() const { return comm_->stats().total_bytes_sent(); }
  // Blob b's name for logs and errors (its index where none was described).
  std::string BlobName(size_t b) const {
    return b < blobs_.names.size() ? blobs_.names[b] : std::to_string(b);
  }
  // The rate the solver applies to blob b's diff this step: learning rate x lr_mult.
  // Only after set_learning_rate.
  double BlobRate(size_t b) const {
    return *learning_rate_ * (b < blobs_.lr_mults.size() ? blobs_.lr_mults[b] : 1.f);
  }

  SyncParameter param_;
  // The transport's host communicator (also the one whose counters the step's
  // accounting reads) and its device one (null when device data goes through host
  // memory and comm_; what it sends is added to comm_'s counters).
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Communicator> device_comm_;
  ExchangedBlobs blobs_;
  // The step's learning rate, once the solver has given one (set_learning_rate).
  std::optional<float> learning_rate_;
  ExchangeStats stats_;
};

// Builds the strategy that `param.method()` names.
std::unique_ptr<GradientExchange> CreateGradientExchange(const SyncParameter& param,
                                                         Transport transport);
// The same with host buffers only (tests, CPU runs).
std::unique_ptr<GradientExchange> CreateGradientExchange(const SyncParameter& param,
                                                         std::shared_ptr<Communicator> host);
// Checks the settings, throwing caffe::Error naming `source` and the field.
void ValidateSyncParameter(const SyncParameter& param, const std::string& source);

}  // namespace caffe

#endif  // CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_
