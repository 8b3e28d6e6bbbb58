// The residual primitives (residual_kernels.hpp) on the GPU, with the kernels of
// device_selection.hpp: what the sparse exchanges use when the solver runs in GPU mode.
// v, u, the ages and the known importances live in device memory; the host copy
// (Host()) is a mirror, downloaded when read after it changed. Work is queued on the
// legacy default stream, after the backward pass that produced the diffs, and each
// primitive computes what HostResidualKernels computes.
#ifndef CAFFE_SYNC_DEVICE_RESIDUAL_KERNELS_HPP_
#define CAFFE_SYNC_DEVICE_RESIDUAL_KERNELS_HPP_

#ifdef USE_CUDA

#include "caffe/sync/device_selection.hpp"
#include "caffe/sync/residual_kernels.hpp"

namespace caffe {

class DeviceResidualKernels : public ResidualKernels {
 public:
  BufferMemory memory() const override { return BufferMemory::DEVICE; }
  const ResidualState& Host() const override;
  const float* Residual(size_t b) const override { return residual_[b].as<float>(); }

  std::unique_ptr<KernelBuffer> NewBuffer() const override;
  void CopyToHost(const void* from, size_t bytes, void* host) const override;
  void CopyFromHost(const void* host, size_t bytes, void* to) const override;
  void Copy(const void* from, size_t bytes, void* to) const override;
  void Synchronize() const override;

  void ClipAndAccumulate(const vector<Blob*>& params, float clip, float momentum) override;
  int NonFiniteBlob() const override;

  float* GatherSelected(const vector<ResidualSelection>& selections, bool keep_local) override;
  const float* LocalValues() const override { return local_values_.as<float>(); }
  bool AllFinite(const float* values, int64_t count) override;
  void ScatterSelected(size_t b, const ResidualSelection& selection, Blob* param,
                       const float* values, float scale) override;
  void ClearSelected(size_t b, const ResidualSelection& selection, int32_t iter) override;
  int64_t LimitSelected(size_t b, const ResidualSelection& selection, Blob* param, float scale,
                        const float* local) override;
  void RecordKnownImportance(size_t b, const ResidualSelection& selection, const Blob& param,
                             float epsilon, bool divide_by_weight) override;
  void AddSelected(size_t b, const ResidualSelection& selection, const float* values) override;
  void Subtract(size_t b, const float* values) override;

  int64_t SelectLargest(size_t b, int64_t k, int32_t* indices) override;
  void Gather(size_t b, const int32_t* indices, int64_t count, float* values) override;
  void ScatterAdd(const float* values, const int32_t* indices, int64_t count, float scale,
                  Blob* param) override;
  void ClearAt(size_t b, const int32_t* indices, int64_t count, int32_t iter) override;

  vector<int32_t> StochasticDraw(size_t b, int64_t iter, double expected, uint64_t stream) override;
  void LastSentMinAndSum(size_t b, int64_t iter, int64_t* min, double* sum) const override;

 protected:
  void Replace(ResidualState state) override;

 private:
  // Blob b's selected indices in the last GatherSelected's upload.
  const int32_t* SelectedIndices(size_t b) const {
    return selected_indices_.as<int32_t>() + index_start_[b];
  }
  float* velocity(size_t b) { return has_velocity_[b] ? velocity_[b].as<float>() : nullptr; }

  vector<DeviceBuffer> residual_, velocity_, last_sent_, known_importance_;
  vector<bool> has_velocity_;
  // The host mirror, and whether the device state changed since it was downloaded.
  mutable ResidualState mirror_;
  mutable bool host_behind_ = false;
  DeviceBuffer health_;  // int32 per blob: set when its accumulated v is not finite
  DeviceBuffer values_, local_values_;  // GatherSelected's array and its copy
  DeviceBuffer selected_indices_;       // every blob's selection, uploaded by GatherSelected
  vector<int64_t> index_start_;
  DeviceBuffer magnitude_;  // SelectLargest's |v|
  DeviceBuffer drawn_;      // StochasticDraw's indices
  mutable DeviceSelectionWorkspace workspace_;
};

}  // namespace caffe

#endif  // USE_CUDA
#endif  // CAFFE_SYNC_DEVICE_RESIDUAL_KERNELS_HPP_
