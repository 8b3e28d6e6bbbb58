// The per-blob state of the sparse exchanges and the primitives their steps are built
// from, so that each step is written once (ResidualExchange: clip-and-accumulate, the
// values' all-reduce, scatter and clearing; TopkAllgatherExchange: the per-rank top-k
// and its all-gather) and only the kernels differ between the CPU and the GPU:
// HostResidualKernels (host_residual_kernels.hpp) keeps the state in host vectors and
// is the reference; DeviceResidualKernels (device_residual_kernels.hpp) keeps it in
// device memory and runs the kernels of device_selection.hpp when the net lives on a
// GPU. The same split as SelectionKernels for IWP's index choice.
//
// The state of blob b: its residual v, the velocity u (momentum correction only), the
// iteration each coordinate was last sent at (its age) and, for IWP's stochastic
// update, each coordinate's importance when last sent (its known importance).
//
// "Kernel memory" below is where the kernels work (memory()): host memory for the host
// kernels, device memory for the device ones. The exchange passes pointers into it
// between the primitives and to the communicator that takes that memory, and reads it
// only through CopyToHost.
#ifndef CAFFE_SYNC_RESIDUAL_KERNELS_HPP_
#define CAFFE_SYNC_RESIDUAL_KERNELS_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/sync/communicator.hpp"

namespace caffe {

// The state on the host, one entry per blob: what SaveState writes and RestoreState
// reads.
struct ResidualState {
  vector<vector<float>> residual;          // v
  vector<vector<float>> velocity;          // u; each empty without momentum correction
  vector<vector<int32_t>> last_sent;       // the iteration each coordinate was last sent at
  vector<vector<float>> known_importance;  // none at all unless the method tracks it
};

// A blob's part of one step's all-reduce: every element, or these sorted indices.
struct ResidualSelection {
  bool all = false;
  vector<int32_t> indices;
};

// An array in kernel memory that grows as needed and is reused across steps.
class KernelBuffer {
 public:
  virtual ~KernelBuffer() = default;
  // Room for at least `bytes`; growing may discard the contents.
  virtual void Reserve(size_t bytes) = 0;
  virtual void* data() = 0;
  template <typename T>
  T* as() { return static_cast<T*>(data()); }
};

class ResidualKernels {
 public:
  virtual ~ResidualKernels() = default;
  virtual BufferMemory memory() const = 0;

  // ---- The state

  // Replaces the state. Every blob needs v and last_sent of its size, and u of its size
  // or none; known importances are there for every blob or for none.
  void Load(ResidualState state);
  // The state on the host (the device kernels download it when it changed since).
  virtual const ResidualState& Host() const = 0;
  size_t blobs() const { return counts_.size(); }
  int64_t count(size_t b) const { return counts_[b]; }
  bool tracks_known_importance() const { return tracks_known_importance_; }
  // Blob b's v in kernel memory, for a method's own selection.
  virtual const float* Residual(size_t b) const = 0;

  // ---- Kernel memory

  virtual std::unique_ptr<KernelBuffer> NewBuffer() const = 0;
  // Copies between kernel memory and host memory, and within kernel memory.
  virtual void CopyToHost(const void* from, size_t bytes, void* host) const = 0;
  virtual void CopyFromHost(const void* host, size_t bytes, void* to) const = 0;
  virtual void Copy(const void* from, size_t bytes, void* to) const = 0;
  // Returns once the queued work is done, so that a phase's time covers its work (the
  // device kernels queue it; the host ones are done on return).
  virtual void Synchronize() const {}

  // ---- Every step

  // Local clipping, then accumulation, for every blob: when clip > 0 and the L2 norm of
  // the gradient g (the diff) exceeds clip, g is scaled to norm clip in place; then
  // v += g, or where u is kept u = momentum u + g, v += u.
  virtual void ClipAndAccumulate(const vector<Blob*>& params, float clip, float momentum) = 0;
  // Whether the kernels can work one bucket of blobs at a time, from a thread of their
  // own for the bucket's values (ResidualExchange's buckets): the host kernels can.
  virtual bool SupportsBuckets() const { return false; }
  // ClipAndAccumulate for params[b], b in `blobs` only (a bucket backward has just
  // finished); a non-finite v there is reported by NonFiniteBlob as the whole step's
  // would be, and `first` starts the step's report afresh. Returns whether these v are
  // all finite.
  virtual bool ClipAndAccumulateBucket(const vector<Blob*>& params, const vector<size_t>& blobs,
                                       float clip, float momentum, bool first);
  // Copies blob b's v at `selection` (all of it when selection.all) to host memory
  // `out`; safe beside work on other blobs (the bucket's values, gathered on the comm
  // thread while backward goes on).
  virtual void CopySelected(size_t b, const ResidualSelection& selection, float* out) const;
  // The first blob whose v the last ClipAndAccumulate left not finite, or -1. The device
  // kernels read it back only when asked (after some rank reported one).
  virtual int NonFiniteBlob() const = 0;

  // ---- The values' all-reduce (ResidualExchange::ReduceSelected)

  // Gathers v at the selections, blob after blob, into one array in kernel memory,
  // followed by one more value: 1 when NonFiniteBlob() >= 0, else 0. Returns the array,
  // which stays valid until the next GatherSelected. With keep_local a copy of the
  // gathered values is kept in LocalValues() (what this rank sent, for the rate limit).
  // The per-blob primitives below take blob b's selection of this gather.
  virtual float* GatherSelected(const vector<ResidualSelection>& selections, bool keep_local) = 0;
  virtual const float* LocalValues() const = 0;
  // Whether all `count` values in kernel memory are finite.
  virtual bool AllFinite(const float* values, int64_t count) = 0;
  // The diff of blob b = values * scale at its selection, 0 elsewhere.
  virtual void ScatterSelected(size_t b, const ResidualSelection& selection, Blob* param,
                               const float* values, float scale) = 0;
  // What blob b sent is cleared: v (and u) zeroed at its selection, which is marked sent
  // at `iter`. A blob sent whole keeps its u: it then behaves like plain momentum SGD
  // (masking u only matters where coordinates wait in the residual).
  virtual void ClearSelected(size_t b, const ResidualSelection& selection, int32_t iter) = 0;
  // The rate limit on blob b's selected values just applied: where |diff| exceeds
  // cap = scale (|w| + RMS of the blob's w), diff becomes +-cap and v = local (1 -
  // cap / |diff|), local being what this rank sent for it. Returns how many were cut.
  virtual int64_t LimitSelected(size_t b, const ResidualSelection& selection, Blob* param,
                                float scale, const float* local) = 0;
  // known = |diff| / (|w| + epsilon), or |diff| without divide_by_weight, at blob b's
  // selection (with TrackKnownImportance only).
  virtual void RecordKnownImportance(size_t b, const ResidualSelection& selection,
                                     const Blob& param, float epsilon, bool divide_by_weight) = 0;

  // v of blob b += values at its selection of the last gather (what the wire's
  // rounding removed from the values sent: SyncParameter.value_encoding FP16).
  virtual void AddSelected(size_t b, const ResidualSelection& selection, const float* values) = 0;
  // v of blob b -= values (count(b) values in kernel memory): what a method applied
  // from v in a form of its own (POWERSGD's low-rank approximation).
  virtual void Subtract(size_t b, const float* values) = 0;

  // ---- Index lists in kernel memory (TOPK_ALLGATHER)

  // The indices of blob b's k largest |v|, ascending, ties to the lower index (the set
  // TopKIndices picks), written to `indices`; returns how many (min(k, count)).
  virtual int64_t SelectLargest(size_t b, int64_t k, int32_t* indices) = 0;
  // values[j] = v[indices[j]].
  virtual void Gather(size_t b, const int32_t* indices, int64_t count, float* values) = 0;
  // diff[indices[j]] += values[j] * scale. Indices distinct within one call; blocks of
  // several ranks go in separate calls, in rank order, so the sums round alike.
  virtual void ScatterAdd(const float* values, const int32_t* indices, int64_t count, float scale,
                          Blob* param) = 0;
  // v and u zeroed at these indices of blob b, marked sent at `iter`.
  virtual void ClearAt(size_t b, const int32_t* indices, int64_t count, int32_t iter) = 0;

  // ---- Ages

  // IWP's stochastic draw for blob b at `iter` (with known importances): index i is kept
  // when DrawKeeps(DrawSeed(stream), i, weight_i, expected / sum of weights) (in float,
  // shared_random.hpp), that is with probability min(1, expected * weight_i / sum),
  // weight_i = (iter - last_sent_i) (known_i + mean known), or the age alone when every
  // such weight is 0. Sorted host indices, the same on every rank.
  virtual vector<int32_t> StochasticDraw(size_t b, int64_t iter, double expected,
                                         uint64_t stream) = 0;
  // The smallest of `iter` and blob b's last-sent iterations, and the sum of these.
  virtual void LastSentMinAndSum(size_t b, int64_t iter, int64_t* min, double* sum) const = 0;

 protected:
  // Takes the state Load checked.
  virtual void Replace(ResidualState state) = 0;

 private:
  vector<int64_t> counts_;
  bool tracks_known_importance_ = false;
};

// The device kernels, or null in CPU-only builds and without a usable GPU.
std::unique_ptr<ResidualKernels> CreateDeviceResidualKernels();

}  // namespace caffe

#endif  // CAFFE_SYNC_RESIDUAL_KERNELS_HPP_
