// The shared part of every sparse method (IWP, FIXED_THRESHOLD, TOPK_ALLGATHER,
// RANDOMK): each rank keeps a residual v per parameter blob. A step
//   clips the local gradient (clip_norm / sqrt(N)), adds it (or, with momentum
//   correction, the velocity u = m u + g) into v, lets the method choose what to
//   send, and zeroes what was sent (v and u: momentum masking).
// Nothing is lost, only delayed: N * (sum of applied gradients) + (sum of all ranks'
// residuals) = sum of all local gradients. During warm-up (and at density 1) every
// element is sent, which is the dense exchange.
#ifndef CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_
#define CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_

#include <string>
#include <vector>

#include "caffe/sync/gradient_exchange.hpp"

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

  // For tests of the conservation invariant.
  const vector<float>& residual(size_t blob) const { return residual_[blob]; }
  const vector<float>& velocity(size_t blob) const { return velocity_[blob]; }

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
  // diff = reduced / N at those positions and 0 elsewhere, and v, u cleared there.
  // Returns the number of values reduced.
  int64_t ReduceSelected(const vector<Blob*>& params, const vector<Selection>& selections);
  // The density for the large blobs that makes the whole step, small blobs included,
  // send `density` of all elements (never less than density / 4 for the large blobs).
  float SparseDensity(const vector<Blob*>& params, float density) const;
  // Zeroes v (and u) at these indices of blob b.
  void ClearSent(size_t b, const vector<int32_t>& indices);
  bool IsDenseBlob(const Blob& blob) const { return blob.count() < param_.min_layer_size(); }

  vector<vector<float>> residual_;  // v
  vector<vector<float>> velocity_;  // u (momentum correction only)
  float momentum_ = 0;
  bool momentum_correction_ = false;
  vector<float> values_;  // scratch: gathered values for the all-reduce

 private:
  void EnsureState(const vector<Blob*>& params);
  void ClipAndAccumulate(const vector<Blob*>& params);
};

}  // namespace caffe

#endif  // CAFFE_SYNC_RESIDUAL_EXCHANGE_HPP_
