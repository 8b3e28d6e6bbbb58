// The residual primitives (residual_kernels.hpp) on the CPU, the reference the device
// kernels must match bit for bit where they can: the state lives in host vectors,
// elementwise loops run on ParallelFor (each element's result does not depend on how
// threads split the range, so every rank gets the same bits), and the passes over whole
// blobs are host_passes.hpp's, whose sums add in an order fixed by the blob's size.
#ifndef CAFFE_SYNC_HOST_RESIDUAL_KERNELS_HPP_
#define CAFFE_SYNC_HOST_RESIDUAL_KERNELS_HPP_

#include "caffe/sync/residual_kernels.hpp"

namespace caffe {

class HostResidualKernels : public ResidualKernels {
 public:
  BufferMemory memory() const override { return BufferMemory::HOST; }
  const ResidualState& Host() const override { return state_; }
  const float* Residual(size_t b) const override { return state_.residual[b].data(); }

  std::unique_ptr<KernelBuffer> NewBuffer() const override;
  void CopyToHost(const void* from, size_t bytes, void* host) const override;
  void CopyFromHost(const void* host, size_t bytes, void* to) const override;
  void Copy(const void* from, size_t bytes, void* to) const override;

  void ClipAndAccumulate(const vector<Blob*>& params, float clip, float momentum) override;
  bool SupportsBuckets() const override { return true; }
  bool ClipAndAccumulateBucket(const vector<Blob*>& params, const vector<size_t>& blobs, float clip,
                               float momentum, bool first) override;
  void CopySelected(size_t b, const ResidualSelection& selection, float* out) const override;
  int NonFiniteBlob() const override { return nonfinite_blob_; }

  float* GatherSelected(const vector<ResidualSelection>& selections, bool keep_local) override;
  const float* LocalValues() const override { return local_values_.data(); }
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
  void Replace(ResidualState state) override { state_ = std::move(state); }

 private:
  ResidualState state_;
  // The first blob whose v went non-finite in the last accumulation, or -1.
  int nonfinite_blob_ = -1;
  vector<float> values_;        // GatherSelected's array
  vector<float> local_values_;  // and its copy for the rate limit
  vector<float> magnitude_;     // SelectLargest's |v|
};

}  // namespace caffe

#endif  // CAFFE_SYNC_HOST_RESIDUAL_KERNELS_HPP_
