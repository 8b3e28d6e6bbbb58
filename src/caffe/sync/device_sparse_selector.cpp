#include "caffe/sync/device_sparse_selector.hpp"

#ifdef USE_CUDA

#include "caffe/util/device_alternate.hpp"

namespace caffe {

void DeviceSparseSelector::FillImportance(const vector<Blob*>& params, const vector<size_t>& blobs,
                                          const vector<const float*>& residuals, float epsilon,
                                          bool divide_by_weight) {
  importance_.Reserve(total_ * sizeof(float));
  for (size_t j = 0; j < blobs.size(); ++j) {
    // Without the weight, |v| / (0 + 1) is |v|.
    const float* w = divide_by_weight ? params[blobs[j]]->gpu_data() : nullptr;
    DeviceImportance(residuals[blobs[j]], w, sizes_[j], divide_by_weight ? epsilon : 1.f,
                     importance_.as<float>() + offsets_[j]);
  }
}

void DeviceSparseSelector::Suppress(size_t j, const vector<int32_t>& indices) {
  if (indices.empty()) return;
  indices_.UploadVector(indices);
  // Clearing v at those positions is exactly what is needed, applied to I.
  DeviceClearAt(indices_.as<int32_t>(), static_cast<int64_t>(indices.size()),
                importance_.as<float>() + offsets_[j], nullptr);
}

void DeviceSparseSelector::Sums(size_t j, double* sum, double* sum_squares) {
  DeviceSumAndSquares(importance(offsets_[j]), sizes_[j], sum, sum_squares, &workspace_);
}

float DeviceSparseSelector::KthLargest(ImportanceSpan span, int64_t k) {
  return DeviceKthLargest(importance(span.begin), span.count, k, &workspace_);
}

float DeviceSparseSelector::KthLargestAt(ImportanceSpan span, const vector<int64_t>& positions,
                                         int64_t k) {
  return DeviceKthLargestAt(importance(span.begin), positions, k, &workspace_);
}

vector<int32_t> DeviceSparseSelector::SelectAtLeast(size_t j, float threshold) {
  indices_.Reserve(sizes_[j] * sizeof(int32_t));
  const int64_t count = DeviceSelectAtLeast(importance(offsets_[j]), sizes_[j], threshold,
                                            indices_.as<int32_t>(), &workspace_);
  return DownloadIndices(count);
}

vector<int32_t> DeviceSparseSelector::SelectTopK(size_t j, int64_t k, float* threshold) {
  indices_.Reserve(sizes_[j] * sizeof(int32_t));
  const int64_t count = DeviceSelectTopK(importance(offsets_[j]), sizes_[j], k,
                                         indices_.as<int32_t>(), threshold, &workspace_);
  return DownloadIndices(count);
}

vector<int32_t> DeviceSparseSelector::DownloadIndices(int64_t count) const {
  return indices_.DownloadVector<int32_t>(static_cast<size_t>(count));
}

std::unique_ptr<SelectionKernels> CreateDeviceSelectionKernels() {
  if (!HasCudaDevice()) return nullptr;
  return std::make_unique<DeviceSparseSelector>();
}

}  // namespace caffe

#endif  // USE_CUDA
