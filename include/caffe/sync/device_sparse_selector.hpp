// IWP's selection primitives (selection_kernels.hpp) on the GPU, with the CUB kernels
// of device_selection.hpp: what IwpExchange uses when the solver runs in GPU mode.
// Importances live in device memory; only the chosen indices (and a few scalars)
// come back to the host, where the index broadcast encodes them.
// The residuals are read where ResidualExchange keeps them in GPU mode, on the
// device, and so are the weights.
#ifndef CAFFE_SYNC_DEVICE_SPARSE_SELECTOR_HPP_
#define CAFFE_SYNC_DEVICE_SPARSE_SELECTOR_HPP_

#ifdef USE_CUDA

#include "caffe/sync/device_selection.hpp"
#include "caffe/sync/selection_kernels.hpp"

namespace caffe {

class DeviceSparseSelector : public SelectionKernels {
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
  const float* importance(int64_t begin) const { return importance_.as<float>() + begin; }
  // The first `count` indices of indices_, on the host.
  vector<int32_t> DownloadIndices(int64_t count) const;

  DeviceBuffer importance_;  // all listed blobs, concatenated
  DeviceBuffer indices_;     // one blob's selection
  DeviceSelectionWorkspace workspace_;
};

}  // namespace caffe

#endif  // USE_CUDA
#endif  // CAFFE_SYNC_DEVICE_SPARSE_SELECTOR_HPP_
