// The error feedback every compressing method shares (IWP, FIXED_THRESHOLD,
// TOPK_ALLGATHER, RANDOMK, SCALECOM, and POWERSGD, whose approximation is taken from
// v): each rank keeps a residual v per parameter blob. A step
//   clips the local gradient (clip_norm / sqrt(N)), adds it (or, with momentum
//   correction, the velocity u = m u + g) into v, lets the method choose what to
//   send, and zeroes what was sent (v and u: momentum masking).
// Nothing is lost, only delayed: N * (sum of applied gradients) + (sum of all ranks'
// residuals) = sum of all local gradients. During warm-up (and at density 1) every
// element is sent, which is the dense exchange.
//
// The budget plan (PlanBudget, once): blobs under min_layer_size travel whole while
// they fit in max_dense_share of the budget; beyond that the largest of them are
// sparsified too. Every coordinate's age (steps since this rank last sent it) is
// kept for the log and for IWP's stochastic update. A non-finite value in what was
// reduced is an error on every rank (the reduced values are the same everywhere).
//
// The state and the arithmetic on it live in ResidualKernels (residual_kernels.hpp),
// chosen at the first step: the device kernels in GPU mode (CUDA builds with a device;
// the methods whose SupportsDeviceResiduals says so), where v and u stay on the device and the
// whole step runs there, else the host ones. Each step below is written once against them;
// collectives on the kernels' arrays go over the communicator that takes their memory
// (NCCL when the transport has it, else through host memory and comm_).
#ifndef CAFFE_EXCHANGES_RESIDUAL_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_RESIDUAL_EXCHANGE_HPP_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caffe/sync/comm_thread.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/residual_kernels.hpp"

namespace caffe {

class ResidualExchange : public GradientExchange {
 public:
  using GradientExchange::GradientExchange;

  bool TakeOverMomentum(float momentum) override;
  // Overlap: when the method can choose a bucket at a time (OverlapsBuckets), each
  // bucket's accumulation and choice run as backward finishes its blobs, and its
  // values travel on a CommThread while backward goes on; Exchange then waits for the
  // rest and applies what arrived (docs/iwp.md, "Overlap with backward").
  void BeginBackward(int iter, const vector<Blob*>& params) override;
  void OnLayerBackward(int layer) override;
  void Exchange(int iter, const vector<Blob*>& params) final;
  // The density in force at `iter`: 1 during warm-up, then the schedule, then density.
  float DensityAt(int iter) const;

  std::string SaveState() const override;
  void RestoreState(const std::string& state) override;
  void CurrentAge(int64_t* max_age, double* mean_age) const override;

  // The plan made at the first step: which blobs travel whole (tests, logs).
  const vector<bool>& dense_blobs() const { return dense_blob_; }

  // For tests of the conservation invariant.
  const vector<float>& residual(size_t blob) const { return HostState().residual[blob]; }
  const vector<float>& velocity(size_t blob) const { return HostState().velocity[blob]; }

 protected:
  using Selection = ResidualSelection;

  // Chooses what travels and moves it; must leave every diff holding the averaged
  // applied gradient and clear what was applied from the residuals (helpers below).
  // `density` applies to the large blobs (see SparseDensity). Returns the number of
  // values this rank sent.
  virtual int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) = 0;

  // One all-reduce of v at the selections (the same on every rank), then
  // diff = reduced / N at those positions and 0 elsewhere, and v, u cleared there
  // (and the ages, and the known importances when tracked). Returns the number of
  // values reduced. A non-finite reduced value throws, naming the blob.
  int64_t ReduceSelected(const vector<Blob*>& params, const vector<Selection>& selections);
  // ReduceSelected's three stages, for the buckets of an overlapped step too: the
  // values of one all-reduce (v gathered at some blobs' selections, in their order, and
  // one more value, the count of ranks whose residual is not finite), summed in place;
  // with a rate limit what this rank sent, with FP16 or INT8 values what the wire's
  // roundings took off them.
  struct ReducedValues {
    float* values = nullptr;  // total + 1 values
    int64_t total = 0;
    const float* local = nullptr;     // total values, or null
    const float* rounding = nullptr;  // total + 1 host values, or null (FP32)
    float flag_scale = 1.f;           // what the non-finite count was scaled by
  };
  // Sums reduced->values over the ranks (encoded roundings into *rounding); returns how
  // many summed values arrived as exactly 0 under an encoding.
  int64_t AllReduceValues(ReducedValues* reduced, vector<float>* rounding);
  // From the summed values of `blobs` (selections indexed by blob): the averaged diffs
  // at the selections, 0 elsewhere; v, u, ages and known importances cleared there; the
  // rate limit; the roundings back into v. Throws on every rank alike on a non-finite
  // residual or sum.
  void ApplyReduced(const vector<Blob*>& params, const vector<size_t>& blobs,
                    const vector<Selection>& selections, const ReducedValues& reduced);
  // The density for the sparse blobs that makes the whole step, blobs sent whole
  // included, send `density` of all elements.
  float SparseDensity(const vector<Blob*>& params, float density) const;
  // Collective: root's `message` (host bytes, any length) replaces every rank's. It
  // takes the values' path: over the device communicator, staged through device
  // memory, when the residuals live on the device and it carries the values;
  // otherwise comm_.
  void BroadcastMessage(std::string* message, int root);
  // Collectives on arrays in the kernels' memory, over the communicator that takes it
  // (through host memory and comm_ when that is device memory without a device
  // communicator): an in-place sum, and every rank's `bytes` concatenated in rank
  // order into `out`.
  void AllReduceSum(float* values, int64_t count);
  void AllGatherBytes(const void* in, int64_t bytes, void* out);
  // Blob b travels whole every step (the budget plan).
  bool IsDenseBlob(size_t b) const { return dense_blob_[b]; }
  // The step being exchanged (set by Exchange before ExchangeSparse runs).
  int current_iter() const { return current_iter_; }

  // IWP's stochastic update (SyncParameter.stochastic_fraction): the shared draw for
  // blob b at the current step, about `expected` sorted indices, the same on every
  // rank with no message. Needs TrackKnownImportance().
  vector<int32_t> StochasticDraw(size_t b, double expected);
  // From now on ReduceSelected remembers |applied| / (|w| + epsilon) of each value it
  // sends (the m of the stochastic draw). Call before the first step.
  void TrackKnownImportance() { track_known_importance_ = true; }

  // ---- Buckets of an overlapped step (BeginBackward). The blobs, in the order backward
  // finishes them, are cut into buckets at layer boundaries; each bucket's values are
  // one all-reduce.
  struct SparseBucket {
    vector<size_t> blobs;
    int ready_after_layer = 0;  // final once backward has passed this layer
    // The step's: whether its v stayed finite, and its summed values.
    bool finite = true;
    vector<float> values, local, rounding;
    ReducedValues reduced;
    int64_t zero_arrivals = 0;
    double agree_seconds = 0, gather_seconds = 0, allreduce_seconds = 0;
  };
  // Whether this method can choose one bucket at a time, the step's shared plan made
  // before backward (the base: no).
  virtual bool OverlapsBuckets() const { return false; }
  // Before backward, on a sparse step: what the whole step's choice needs first.
  virtual void PlanSparseStep(int iter, const vector<Blob*>& params, float density) {}
  // On the main thread, once the bucket's blobs are accumulated: this rank's part of
  // the choice.
  virtual void ChooseBucket(const SparseBucket& bucket, const vector<Blob*>& params) {}
  // On the CommThread: from every rank's part, the selections of the bucket's blobs,
  // written to step_selections() at their blob indices.
  virtual void AgreeOnBucket(const SparseBucket& bucket, const vector<Blob*>& params) {}
  // After every bucket has been applied: the method's record of the sparse step.
  virtual void FinishSparseStep(const vector<Blob*>& params) {}
  // The current step's selections, one per blob (written by AgreeOnBucket).
  vector<Selection>& step_selections() { return step_selections_; }

  // A method's own state for exact resume, saved after the residuals (empty: none).
  virtual std::string SaveMethodState() const { return {}; }
  virtual void RestoreMethodState(const std::string& state) {}

  // Decides which blobs travel whole (set_dense_blobs) and logs the plan on rank 0,
  // once, at the first step. By default the density budget's plan (see the file
  // comment); a method with another notion of what is worth compressing replaces it.
  virtual void PlanBudget(const vector<Blob*>& params);
  void set_dense_blobs(vector<bool> dense) { dense_blob_ = std::move(dense); }
  // Whether coordinates wait one by one, so that their ages mean something (logs, CSV).
  virtual bool TracksAges() const { return true; }

  // Whether this method's ExchangeSparse works on device residuals (it then touches
  // them only through ReduceSelected and residual_kernels()).
  virtual bool SupportsDeviceResiduals() const { return false; }
  // The state and its primitives (from the first step on).
  ResidualKernels& residual_kernels() { return *kernels_; }
  // True once the residuals live on the device (decided at the first step).
  bool on_device() const { return kernels_ && kernels_->memory() == BufferMemory::DEVICE; }
  // Blob b's v where the step works on it: device memory when on_device(), else host.
  const float* ResidualData(size_t b) const { return kernels_->Residual(b); }
  // Seconds since `start`, once the kernels' queued work is done: device phases are
  // timed to their end, so the select / all-reduce / scatter split stays truthful.
  double PhaseSecondsSince(std::chrono::steady_clock::time_point start) const;

  float momentum_ = 0;
  bool momentum_correction_ = false;
  // The solver's momentum, offered whether taken over or not (the rate limit counts
  // its gain when the solver applies it).
  float solver_momentum_ = 0;

 private:
  // Makes the kernels (first step) and hands them a restored or fresh state.
  void EnsureState(const vector<Blob*>& params);
  // `state` made whole for these blobs: fresh residuals when it holds none, velocities
  // as momentum correction wants them, ages and known importances where missing.
  ResidualState CompleteState(ResidualState state, const vector<Blob*>& params) const;
  // The state as SaveState writes it: a restored one not yet handed to the kernels, or
  // the kernels' (empty before the first step).
  const ResidualState& HostState() const;
  // The rate the solver applies to blob b's diff this step, with the solver's momentum
  // gain when it applies the momentum (the rate limit's scale).
  double StepRate(size_t b) const;
  // The rate limit (max_relative_step) on blob b's values just applied at its
  // selection; `local` holds what this rank sent for them.
  void LimitStep(size_t b, const Selection& selection, Blob* param, const float* local);
  // The smallest last-sent iteration of blob b and the sum of all of them.
  void LastSentMinAndSum(size_t b, int64_t* min, double* sum) const;
  // Throws on every rank alike when the all-reduced count of ranks whose residual is
  // not finite is positive.
  void CheckResidualsFinite(float ranks_not_finite) const;
  // Throws on every rank alike when a reduced value of blob b (host values) is not
  // finite.
  void CheckFinite(size_t b, const float* values, int64_t count) const;
  // clip_norm / sqrt(N), or 0 when clipping is off.
  float LocalClipNorm() const;
  // The communicator for arrays in the kernels' memory: comm_ for host memory, the
  // device communicator for device memory, or null when there is none.
  Communicator* KernelMemoryCommunicator() const;
  // Adds what the device communicator sent since `before` to comm_'s counters.
  void RecordDeviceBytes(const char* op, int64_t before);

  // The overlapped step's stages: bucket i's accumulation and choice (main thread),
  // then its agreement, gather and all-reduce (CommThread); after backward, the wait
  // and every bucket's values applied.
  void PlanBuckets(const vector<Blob*>& params);
  void StartBucket(size_t i);
  void ReduceBucket(SparseBucket* bucket);
  void FinishOverlappedStep(int iter, const vector<Blob*>& params);
  // Whether this step can overlap: settings, kernels, ranks.
  bool CanOverlapStep(float density) const;
  // The ages CSV and the step's accounting, the end of every Exchange.
  void EndStepAccounting(int iter, const vector<Blob*>& params, int64_t sent, int64_t bytes,
                         float density);

  std::unique_ptr<ResidualKernels> kernels_;
  vector<SparseBucket> buckets_;
  vector<Selection> step_selections_;
  vector<Blob*> step_params_;
  bool overlapped_ = false;
  float step_density_ = 1.f;
  size_t buckets_started_ = 0;
  int64_t step_bytes_before_ = 0;
  // A state RestoreState read, handed to the kernels at the next step.
  std::optional<ResidualState> restored_;
  vector<bool> dense_blob_;
  bool track_known_importance_ = false;
  // What this rank's roundings took off the values of the last FP16 all-reduce, and
  // its sent values less that (the rate limit's shares).
  vector<float> rounding_, travelled_;
  int current_iter_ = 0;
  // Host copies of device values for an all-reduce without a device communicator,
  // and the device copy of a message for a broadcast with one.
  vector<float> host_values_;
  std::unique_ptr<KernelBuffer> message_staging_;
  // Last, so that it is destroyed first: queued buckets use the members above.
  std::unique_ptr<CommThread> background_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_RESIDUAL_EXCHANGE_HPP_
