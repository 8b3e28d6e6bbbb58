// The primitives IWP's index selection is built from, so that the algorithm is
// written once (IwpExchange::ChooseIndices: budget split, threshold modes, who
// selects what) and only the kernels differ between the CPU and the GPU:
// HostSelectionKernels here runs them with the standard library on the CPU and is
// the reference; DeviceSparseSelector (device_sparse_selector.hpp) runs them with the
// CUB kernels of device_selection.hpp when the net lives on a GPU.
//
// One step's importances of the listed sparse blobs are kept as one concatenated
// array: blob j of the list occupies Span(j), and All() is the whole array (the
// global-threshold mode ranks all blobs together).
#ifndef CAFFE_SYNC_SELECTION_KERNELS_HPP_
#define CAFFE_SYNC_SELECTION_KERNELS_HPP_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "caffe/blob.hpp"

namespace caffe {

// A stretch of the concatenated importance array.
struct ImportanceSpan {
  int64_t begin = 0;
  int64_t count = 0;
};

class SelectionKernels {
 public:
  virtual ~SelectionKernels() = default;

  // I = |v| / (|w| + epsilon) (or |v| without divide_by_weight) for each
  // params[blobs[j]], with v = residuals[blobs[j]], concatenated in list order.
  // Replaces the previous step's importances. The residuals are in the kernels'
  // memory: host arrays for HostSelectionKernels, device arrays for the device kernels
  // (which read the weights there too).
  void ComputeImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                         const vector<const float*>& residuals, float epsilon,
                         bool divide_by_weight = true);
  size_t blobs() const { return sizes_.size(); }
  ImportanceSpan Span(size_t j) const { return {offsets_[j], sizes_[j]}; }
  ImportanceSpan All() const { return {0, total_}; }

  // Sum and sum of squares of blob j's importances, accumulated in double.
  virtual void Sums(size_t j, double* sum, double* sum_squares) = 0;
  // The k-th largest importance in `span` (1 <= k <= span.count).
  virtual float KthLargest(ImportanceSpan span, int64_t k) = 0;
  // The k-th largest of the importances at `positions` within `span` (a sample).
  virtual float KthLargestAt(ImportanceSpan span, const vector<int64_t>& positions, int64_t k) = 0;
  // Indices (within blob j, ascending) of every importance >= threshold and > 0:
  // a coordinate with nothing waiting never travels.
  virtual vector<int32_t> SelectAtLeast(size_t j, float threshold) = 0;
  // Sets blob j's importance to 0 at these (sorted) indices, so that no selection
  // picks them again (they travel by another rule).
  virtual void Suppress(size_t j, const vector<int32_t>& indices) = 0;
  // Indices (within blob j, ascending) of its k largest importances, ties to the lower
  // index; *threshold gets the smallest selected importance (0 when none is).
  virtual vector<int32_t> SelectTopK(size_t j, int64_t k, float* threshold) = 0;

 protected:
  // Fills the importances of the listed blobs, blob j at offsets_[j] (the offsets and
  // sizes are already set when this runs): |v| / (|w| + epsilon) with
  // divide_by_weight, else |v|.
  virtual void FillImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                              const vector<const float*>& residuals, float epsilon,
                              bool divide_by_weight) = 0;

  vector<int64_t> offsets_, sizes_;
  int64_t total_ = 0;
};

class HostSelectionKernels : public SelectionKernels {
 public:
  void Sums(size_t j, double* sum, double* sum_squares) override;
  float KthLargest(ImportanceSpan span, int64_t k) override;
  float KthLargestAt(ImportanceSpan span, const vector<int64_t>& positions, int64_t k) override;
  vector<int32_t> SelectAtLeast(size_t j, float threshold) override;
  vector<int32_t> SelectTopK(size_t j, int64_t k, float* threshold) override;
  void Suppress(size_t j, const vector<int32_t>& indices) override;

 protected:
  void FillImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                      const vector<const float*>& residuals, float epsilon,
                      bool divide_by_weight) override;

 private:
  vector<float> importance_;
  vector<float> scratch_;
  // Each listed blob's sum and sum of squares of importance, taken as they are filled.
  vector<std::pair<double, double>> sums_;
};

// The device kernels, or null in CPU-only builds and without a usable GPU.
std::unique_ptr<SelectionKernels> CreateDeviceSelectionKernels();

// Variance-to-mean ratio from the sums of n values (0 for no values or a mean <= 0).
float VarianceToMean(double sum, double sum_squares, int64_t n);
// The positions a sampled threshold looks at: `samples` draws with replacement from
// [0, n) by a generator seeded with `seed`, in draw order. Every rank and both kernel
// sets draw the same ones.
vector<int64_t> SamplePositions(uint64_t seed, int64_t n, int64_t samples);

}  // namespace caffe

#endif  // CAFFE_SYNC_SELECTION_KERNELS_HPP_
