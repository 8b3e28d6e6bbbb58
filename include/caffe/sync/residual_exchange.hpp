// The shared part of every sparse method (IWP, FIXED_THRESHOLD, TOPK_ALLGATHER,
// RANDOMK): each rank keeps a residual v per parameter blob. A step
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
// In GPU mode (CUDA builds with a device; all four sparse methods support it) v and u
// live on the device and the whole step runs there: clip-and-accumulate, selection,
// gather, the values' all-reduce and the index message (NCCL when built in, else
// through host memory and the communicator), scatter and clearing
// (residual_exchange_device.cpp). The host
// vectors are then a mirror, brought up to date when read (residual(), SaveState).
#ifndef CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_
#define CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "caffe/sync/gradient_exchange.hpp"
#ifdef USE_CUDA
#include "caffe/sync/device_selection.hpp"
#include "caffe/util/device_buffer.hpp"
#endif

namespace caffe {

class ResidualExchange : public GradientExchange {
 public:
  using GradientExchange::GradientExchange;

  bool TakeOverMomentum(float momentum) override;
  void Exchange(int iter, const vector<Blob*>& params) final;
  // The density in force at `iter`: 1 during warm-up, then the schedule, then density.
  float DensityAt(int iter) const;

  std::string SaveState() const override;
  void RestoreState(const std::string& state) override;
  void CurrentAge(int64_t* max_age, double* mean_age) const override;

  // The plan made at the first step: which blobs travel whole (tests, logs).
  const vector<bool>& dense_blobs() const { return dense_blob_; }

  // For tests of the conservation invariant.
  const vector<float>& residual(size_t blob) const {
    SyncHostMirror();
    return residual_[blob];
  }
  const vector<float>& velocity(size_t blob) const {
    SyncHostMirror();
    return velocity_[blob];
  }

 protected:
  // A blob's selection for this step: every element, or these sorted indices.
  struct Selection {
    bool all = false;
    vector<int32_t> indices;
  };

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
  // The density for the sparse blobs that makes the whole step, blobs sent whole
  // included, send `density` of all elements.
  float SparseDensity(const vector<Blob*>& params, float density) const;
  // Zeroes v (and u) at these indices of blob b and marks them sent.
  void ClearSent(size_t b, const vector<int32_t>& indices);
  // Collective: root's `message` (host bytes, any length) replaces every rank's. It
  // takes the values' path: NCCL, staged through device memory, when the residuals
  // live on the device and NCCL carries the values; otherwise the communicator.
  void BroadcastMessage(std::string* message, int root);
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

  // A method's own state for exact resume, saved after the residuals (empty: none).
  virtual std::string SaveMethodState() const { return {}; }
  virtual void RestoreMethodState(const std::string& state) {}

  // Whether this method's ExchangeSparse works on device residuals (it then uses only
  // ReduceSelected and ResidualData, or device code of its own).
  virtual bool SupportsDeviceResiduals() const { return false; }
  // True once the residuals live on the device (decided at the first step).
  bool on_device() const { return on_device_; }
  // Blob b's v where the step works on it: device memory when on_device(), else host.
  const float* ResidualData(size_t b) const;
#ifdef USE_CUDA
  // Device v and u (null without momentum correction) of blob b for methods that
  // change them themselves (on_device() only); the host mirror is then behind.
  float* MutableDeviceResidual(size_t b);
  float* MutableDeviceVelocity(size_t b);
  // Marks `count` device indices of blob b sent at the current step (their age
  // restarts), for methods that clear the residual themselves.
  void MarkSentOnDevice(size_t b, const int32_t* indices, int64_t count);
  // Sums `count` device floats over all ranks in place.
  void AllReduceOnDevice(float* values, int64_t count);
  // Every rank's `bytes` device bytes, concatenated in rank order into `out`.
  void AllGatherOnDevice(const void* in, int64_t bytes, void* out);
  DeviceSelectionWorkspace* device_workspace() { return &device_workspace_; }
  // Seconds since `start`, once the queued device work is done: device phases are
  // timed to their end, so the select / all-reduce / scatter split stays truthful.
  static double DeviceSecondsSince(std::chrono::steady_clock::time_point start);
#endif

  // Host copies in CPU mode; in GPU mode a mirror of the device state (mutable: the
  // const accessors refresh it).
  mutable vector<vector<float>> residual_;  // v
  mutable vector<vector<float>> velocity_;  // u (momentum correction only)
  float momentum_ = 0;
  bool momentum_correction_ = false;
  // The solver's momentum, offered whether taken over or not (the rate limit counts
  // its gain when the solver applies it).
  float solver_momentum_ = 0;
  vector<float> values_;  // scratch: gathered values for the all-reduce
  vector<float> local_values_;  // scratch: this rank's part of them (rate limit)
  // Per coordinate: the iteration it was last sent (cleared) at, and with
  // TrackKnownImportance its importance then. Host, or mirrors like residual_.
  mutable vector<vector<int32_t>> last_sent_;
  mutable vector<vector<float>> known_importance_;

 private:
  void EnsureState(const vector<Blob*>& params);
  // Decides dense_blob_ for the target density and logs the plan (rank 0).
  void PlanBudget(const vector<Blob*>& params);
  // Marks every coordinate of blob b sent at the current step.
  void MarkAllSent(size_t b);
  // The rate the solver applies to blob b's diff this step, with the solver's momentum
  // gain when it applies the momentum (the rate limit's scale).
  double StepRate(size_t b) const;
  // The rate limit (max_relative_step) on blob b's values just applied at `indices`
  // (host diffs); `local` holds what this rank sent for them.
  void LimitStep(size_t b, Blob& param, const vector<int32_t>& indices, const float* local);
  // The smallest last-sent iteration of blob b and the sum of all of them.
  void LastSentMinAndSum(size_t b, int64_t* min, double* sum) const;
  // Throws on every rank alike when the all-reduced count of ranks whose residual is
  // not finite is positive.
  void CheckResidualsFinite(float ranks_not_finite) const;
  // Throws on every rank alike when a reduced value of blob b is not finite.
  void CheckFinite(size_t b, const float* values, int64_t count) const;
  void ClipAndAccumulate(const vector<Blob*>& params);
  // clip_norm / sqrt(N), or 0 when clipping is off.
  float LocalClipNorm() const;
  // Downloads the device state into the host vectors when they are behind.
  void SyncHostMirror() const;

  bool on_device_ = false;
  bool state_decided_ = false;
  vector<bool> dense_blob_;
  bool track_known_importance_ = false;
  // The capture probe (measure_capture): the ranks' summed residual of the sparse
  // blobs before this step's selection, found by a dense all-reduce; returns the
  // bytes that cost (left out of the step's). RecordCapture then scores the choice.
  int64_t SumResidualsForProbe(const vector<Blob*>& params);
  void RecordCapture(const vector<Blob*>& params);
  vector<float> probe_summed_;
  int current_iter_ = 0;
  // The first blob whose residual went non-finite in this step's accumulation, or -1.
  int nonfinite_blob_ = -1;
  // GPU mode: the host vectors hold newer state than the device (restored), or older.
  bool device_behind_ = false;
  mutable bool host_behind_ = false;

#ifdef USE_CUDA
  // residual_exchange_device.cpp: the device counterparts of the steps above.
  void UploadState();
  void ClipAndAccumulateOnDevice(const vector<Blob*>& params);
  int64_t ReduceSelectedOnDevice(const vector<Blob*>& params, const vector<Selection>& selections);
  vector<int32_t> StochasticDrawOnDevice(size_t b, double expected, uint64_t stream);
  void LastSentMinAndSumOnDevice(size_t b, int64_t* min, double* sum) const;
  // The transport's device communicator (NCCL), or null: then collectives on device
  // data go through host memory and comm_.
  Communicator* DeviceCommunicator() const { return device_comm_.get(); }
  // Adds what the device communicator sent since `before` to comm_'s counters.
  void RecordDeviceBytes(const char* op, int64_t before);
  // BroadcastMessage over `device` (NCCL): length first, then the bytes.
  void BroadcastMessageOnDevice(std::string* message, int root, Communicator* device);

  vector<DeviceBuffer> device_residual_, device_velocity_;
  vector<DeviceBuffer> device_last_sent_, device_known_importance_;
  DeviceBuffer device_values_, device_indices_;
  DeviceBuffer device_message_;  // BroadcastMessage's staging buffer
  DeviceBuffer device_health_;   // int32: set when an accumulated residual is not finite
  DeviceBuffer device_local_values_;  // this rank's gathered values (rate limit)
  DeviceSelectionWorkspace device_workspace_;
#endif
};

}  // namespace caffe

#endif  // CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_
