#include "caffe/sync/device_residual_kernels.hpp"

#ifdef USE_CUDA

#include <algorithm>
#include <cmath>

#include "caffe/util/device_alternate.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

class DeviceKernelBuffer : public KernelBuffer {
 public:
  void Reserve(size_t bytes) override { buffer_.Reserve(bytes); }
  void* data() override { return buffer_.data(); }

 private:
  DeviceBuffer buffer_;
};

}  // namespace

void DeviceResidualKernels::Replace(ResidualState state) {
  const size_t m = state.residual.size();
  residual_.resize(m);
  velocity_.resize(m);
  last_sent_.resize(m);
  known_importance_.resize(state.known_importance.size());
  has_velocity_.assign(m, false);
  for (size_t b = 0; b < m; ++b) {
    residual_[b].UploadVector(state.residual[b]);
    has_velocity_[b] = !state.velocity[b].empty();
    if (has_velocity_[b]) velocity_[b].UploadVector(state.velocity[b]);
    last_sent_[b].UploadVector(state.last_sent[b]);
    if (!state.known_importance.empty()) {
      known_importance_[b].UploadVector(state.known_importance[b]);
    }
  }
  // What was uploaded is the mirror.
  mirror_ = std::move(state);
  host_behind_ = false;
}

const ResidualState& DeviceResidualKernels::Host() const {
  if (!host_behind_) return mirror_;
  for (size_t b = 0; b < blobs(); ++b) {
    const size_t n = static_cast<size_t>(count(b));
    residual_[b].Download(mirror_.residual[b].data(), n * sizeof(float));
    if (has_velocity_[b]) velocity_[b].Download(mirror_.velocity[b].data(), n * sizeof(float));
    last_sent_[b].Download(mirror_.last_sent[b].data(), n * sizeof(int32_t));
    if (tracks_known_importance()) {
      known_importance_[b].Download(mirror_.known_importance[b].data(), n * sizeof(float));
    }
  }
  host_behind_ = false;
  return mirror_;
}

std::unique_ptr<KernelBuffer> DeviceResidualKernels::NewBuffer() const {
  return std::make_unique<DeviceKernelBuffer>();
}

void DeviceResidualKernels::CopyToHost(const void* from, size_t bytes, void* host) const {
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(host, from, bytes, cudaMemcpyDeviceToHost));
}

void DeviceResidualKernels::CopyFromHost(const void* host, size_t bytes, void* to) const {
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(to, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceResidualKernels::Copy(const void* from, size_t bytes, void* to) const {
  if (bytes > 0 && from != to) CUDA_CHECK(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice));
}

void DeviceResidualKernels::Synchronize() const {
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void DeviceResidualKernels::ClipAndAccumulate(const vector<Blob*>& params, float clip,
                                              float momentum) {
  // One flag per blob, read only when some rank reports a non-finite residual.
  health_.Reserve(std::max<size_t>(params.size(), 1) * sizeof(int32_t));
  CUDA_CHECK(cudaMemset(health_.data(), 0, params.size() * sizeof(int32_t)));
  for (size_t b = 0; b < params.size(); ++b) {
    DeviceClipAndAccumulate(params[b]->mutable_gpu_diff(), params[b]->count(), clip, momentum,
                            residual_[b].as<float>(), velocity(b), health_.as<int32_t>() + b,
                            &workspace_);
  }
  host_behind_ = true;
}

int DeviceResidualKernels::NonFiniteBlob() const {
  const vector<int32_t> flags = health_.DownloadVector<int32_t>(blobs());
  for (size_t b = 0; b < flags.size(); ++b) {
    if (flags[b]) return static_cast<int>(b);
  }
  return -1;
}

float* DeviceResidualKernels::GatherSelected(const vector<ResidualSelection>& selections,
                                             bool keep_local) {
  const size_t m = selections.size();
  // All blobs' indices in one upload; blob b's start at index_start_[b].
  int64_t total = 0;
  vector<int32_t> all_indices;
  index_start_.assign(m, 0);
  for (size_t b = 0; b < m; ++b) {
    if (selections[b].all) {
      total += count(b);
    } else {
      index_start_[b] = static_cast<int64_t>(all_indices.size());
      all_indices.insert(all_indices.end(), selections[b].indices.begin(),
                         selections[b].indices.end());
      total += static_cast<int64_t>(selections[b].indices.size());
    }
  }
  selected_indices_.UploadVector(all_indices);
  values_.Reserve((total + 1) * sizeof(float));
  float* values = values_.as<float>();
  DeviceAnyFlagAsFloat(health_.as<int32_t>(), static_cast<int64_t>(m), values + total);
  int64_t pos = 0;
  for (size_t b = 0; b < m; ++b) {
    const float* v = residual_[b].as<float>();
    if (selections[b].all) {
      math::gpu_copy(count(b), v, values + pos);
      pos += count(b);
    } else {
      const int64_t k = static_cast<int64_t>(selections[b].indices.size());
      DeviceGather(v, SelectedIndices(b), k, values + pos);
      pos += k;
    }
  }
  if (keep_local && total > 0) {
    local_values_.Reserve(total * sizeof(float));
    Copy(values, total * sizeof(float), local_values_.data());
  }
  return values;
}

bool DeviceResidualKernels::AllFinite(const float* values, int64_t count) {
  // A NaN or Inf anywhere makes the double sums non-finite: one reduction answers.
  double sum = 0, squares = 0;
  DeviceSumAndSquares(values, count, &sum, &squares, &workspace_);
  return std::isfinite(sum) && std::isfinite(squares);
}

void DeviceResidualKernels::ScatterSelected(size_t b, const ResidualSelection& selection,
                                            Blob* param, const float* values, float scale) {
  const int64_t n = param->count();
  float* diff = param->mutable_gpu_diff();
  if (selection.all) {
    // diff = sum * scale: one rounding, as on the host.
    math::gpu_copy(n, values, diff);
    math::gpu_scal(n, scale, diff);
    return;
  }
  math::gpu_set(n, 0.f, diff);
  DeviceScatter(values, SelectedIndices(b), static_cast<int64_t>(selection.indices.size()), scale,
                diff);
}

void DeviceResidualKernels::ClearSelected(size_t b, const ResidualSelection& selection,
                                          int32_t iter) {
  if (selection.all) {
    math::gpu_set(count(b), 0.f, residual_[b].as<float>());
    DeviceFillInt(last_sent_[b].as<int32_t>(), count(b), iter);
    host_behind_ = true;
    return;
  }
  ClearAt(b, SelectedIndices(b), static_cast<int64_t>(selection.indices.size()), iter);
}

int64_t DeviceResidualKernels::LimitSelected(size_t b, const ResidualSelection& selection,
                                             Blob* param, float scale, const float* local) {
  const int64_t n = param->count();
  float* diff = param->mutable_gpu_diff();
  const float* w = param->gpu_data();
  double w_sum = 0, w_squares = 0;
  DeviceSumAndSquares(w, n, &w_sum, &w_squares, &workspace_);
  const float rms = static_cast<float>(std::sqrt(w_squares / std::max<int64_t>(n, 1)));
  host_behind_ = true;
  return DeviceRateLimit(SelectedIndices(b), static_cast<int64_t>(selection.indices.size()), w,
                         rms, scale, local, diff, residual_[b].as<float>(), &workspace_);
}

void DeviceResidualKernels::RecordKnownImportance(size_t b, const ResidualSelection& selection,
                                                  const Blob& param, float epsilon,
                                                  bool divide_by_weight) {
  const int32_t* at = selection.all ? nullptr : SelectedIndices(b);
  const int64_t k = selection.all ? param.count() : static_cast<int64_t>(selection.indices.size());
  DeviceRecordImportance(param.gpu_diff(), param.gpu_data(), at, k, epsilon, divide_by_weight,
                         known_importance_[b].as<float>());
  host_behind_ = true;
}

void DeviceResidualKernels::AddSelected(size_t b, const ResidualSelection& selection,
                                        const float* values) {
  float* v = residual_[b].as<float>();
  if (selection.all) {
    math::gpu_axpy(count(b), 1.f, values, v);
  } else {
    DeviceScatterAdd(values, SelectedIndices(b), static_cast<int64_t>(selection.indices.size()), 1.f, v);
  }
  host_behind_ = true;
}

void DeviceResidualKernels::Subtract(size_t b, const float* values) {
  math::gpu_axpy(count(b), -1.f, values, residual_[b].as<float>());
  host_behind_ = true;
}

int64_t DeviceResidualKernels::SelectLargest(size_t b, int64_t k, int32_t* indices) {
  const int64_t n = count(b);
  magnitude_.Reserve(n * sizeof(float));
  DeviceAbs(residual_[b].as<float>(), n, magnitude_.as<float>());
  float smallest = 0;
  return DeviceSelectTopK(magnitude_.as<float>(), n, k, indices, &smallest, &workspace_);
}

void DeviceResidualKernels::Gather(size_t b, const int32_t* indices, int64_t count,
                                   float* values) {
  DeviceGather(residual_[b].as<float>(), indices, count, values);
}

void DeviceResidualKernels::ScatterAdd(const float* values, const int32_t* indices, int64_t count,
                                       float scale, Blob* param) {
  DeviceScatterAdd(values, indices, count, scale, param->mutable_gpu_diff());
}

void DeviceResidualKernels::ClearAt(size_t b, const int32_t* indices, int64_t count,
                                    int32_t iter) {
  DeviceClearAt(indices, count, residual_[b].as<float>(), velocity(b));
  DeviceMarkSent(indices, count, iter, last_sent_[b].as<int32_t>());
  host_behind_ = true;
}

vector<int32_t> DeviceResidualKernels::StochasticDraw(size_t b, int64_t iter, double expected,
                                                      uint64_t stream) {
  const int64_t n = count(b);
  drawn_.Reserve(std::max<int64_t>(n, 1) * sizeof(int32_t));
  const int64_t drawn =
      DeviceStochasticDraw(last_sent_[b].as<int32_t>(), known_importance_[b].as<float>(), n, iter,
                           expected, stream, drawn_.as<int32_t>(), &workspace_);
  return drawn_.DownloadVector<int32_t>(static_cast<size_t>(drawn));
}

void DeviceResidualKernels::LastSentMinAndSum(size_t b, int64_t iter, int64_t* min,
                                              double* sum) const {
  int64_t smallest = iter, total = 0;
  if (count(b) > 0) {
    DeviceMinAndSum(last_sent_[b].as<int32_t>(), count(b), &smallest, &total, &workspace_);
  }
  *min = std::min(smallest, iter);
  *sum = static_cast<double>(total);
}

std::unique_ptr<ResidualKernels> CreateDeviceResidualKernels() {
  if (!HasCudaDevice()) return nullptr;
  return std::make_unique<DeviceResidualKernels>();
}

}  // namespace caffe

#endif  // USE_CUDA
