// ResidualExchange's steps on device residuals (GPU mode; see residual_exchange.hpp):
// the same arithmetic as the host code in residual_exchange.cpp, with the kernels of
// device_selection.hpp. Everything runs on the legacy default stream, after the
// backward pass that produced the diffs; each phase waits for the device before its
// time is recorded, so the select / all-reduce / scatter split stays truthful.
#include "caffe/sync/residual_exchange.hpp"

#ifdef USE_CUDA

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "caffe/util/device_alternate.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

double ResidualExchange::DeviceSecondsSince(std::chrono::steady_clock::time_point start) {
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void ResidualExchange::UploadState() {
  device_residual_.resize(residual_.size());
  device_velocity_.resize(residual_.size());
  device_last_sent_.resize(residual_.size());
  device_known_importance_.resize(known_importance_.size());
  for (size_t b = 0; b < residual_.size(); ++b) {
    device_residual_[b].UploadVector(residual_[b]);
    if (momentum_correction_) device_velocity_[b].UploadVector(velocity_[b]);
    device_last_sent_[b].UploadVector(last_sent_[b]);
    if (!known_importance_.empty()) device_known_importance_[b].UploadVector(known_importance_[b]);
  }
  device_behind_ = false;
  host_behind_ = false;
}

void ResidualExchange::ClipAndAccumulateOnDevice(const vector<Blob*>& params) {
  const float clip = LocalClipNorm();
  // One flag per blob, read only when some rank reports a non-finite residual.
  device_health_.Reserve(std::max<size_t>(params.size(), 1) * sizeof(int32_t));
  CUDA_CHECK(cudaMemset(device_health_.data(), 0, params.size() * sizeof(int32_t)));
  for (size_t b = 0; b < params.size(); ++b) {
    float* u = momentum_correction_ ? device_velocity_[b].as<float>() : nullptr;
    DeviceClipAndAccumulate(params[b]->mutable_gpu_diff(), params[b]->count(), clip, momentum_,
                            device_residual_[b].as<float>(), u,
                            device_health_.as<int32_t>() + b, &device_workspace_);
  }
  host_behind_ = true;
}

int64_t ResidualExchange::ReduceSelectedOnDevice(const vector<Blob*>& params,
                                                 const vector<Selection>& selections) {
  auto start = std::chrono::steady_clock::now();
  const size_t m = params.size();
  // All blobs' indices in one upload; blob b's start at index_start[b].
  int64_t total = 0;
  vector<int32_t> all_indices;
  vector<int64_t> index_start(m, 0);
  for (size_t b = 0; b < m; ++b) {
    if (selections[b].all) {
      total += params[b]->count();
    } else {
      index_start[b] = static_cast<int64_t>(all_indices.size());
      all_indices.insert(all_indices.end(), selections[b].indices.begin(),
                         selections[b].indices.end());
      total += static_cast<int64_t>(selections[b].indices.size());
    }
  }
  device_indices_.UploadVector(all_indices);
  // One more value after the gradients: how many ranks hold a non-finite residual.
  device_values_.Reserve((total + 1) * sizeof(float));
  float* values = device_values_.as<float>();
  DeviceAnyFlagAsFloat(device_health_.as<int32_t>(), static_cast<int64_t>(m), values + total);
  const int32_t* indices = device_indices_.as<int32_t>();
  int64_t pos = 0;
  for (size_t b = 0; b < m; ++b) {
    const float* v = device_residual_[b].as<float>();
    if (selections[b].all) {
      math::gpu_copy(params[b]->count(), v, values + pos);
      pos += params[b]->count();
    } else {
      const int64_t k = static_cast<int64_t>(selections[b].indices.size());
      DeviceGather(v, indices + index_start[b], k, values + pos);
      pos += k;
    }
  }
  stats_.AddTime(ExchangeStats::GATHER, DeviceSecondsSince(start));

  const bool limit = param_.max_relative_step() > 0 && step_rates_.size() == params.size();
  if (limit && total > 0) {
    device_local_values_.Reserve(total * sizeof(float));
    CUDA_CHECK(cudaMemcpy(device_local_values_.data(), values, total * sizeof(float),
                          cudaMemcpyDeviceToDevice));
  }
  start = std::chrono::steady_clock::now();
  AllReduceOnDevice(values, total + 1);
  stats_.AddTime(ExchangeStats::ALLREDUCE, DeviceSecondsSince(start));
  float ranks_not_finite = 0;
  CUDA_CHECK(cudaMemcpy(&ranks_not_finite, values + total, sizeof(float), cudaMemcpyDeviceToHost));
  if (ranks_not_finite > 0) {
    const vector<int32_t> flags = device_health_.DownloadVector<int32_t>(m);
    nonfinite_blob_ = -1;
    for (size_t b = 0; b < m && nonfinite_blob_ < 0; ++b) {
      if (flags[b]) nonfinite_blob_ = static_cast<int>(b);
    }
    CheckResidualsFinite(ranks_not_finite);
  }

  start = std::chrono::steady_clock::now();
  // One reduction tells whether every summed value is finite (a NaN or Inf makes the
  // double sums non-finite); only then is the culprit looked for blob by blob. The
  // values are the same on every rank, so every rank stops alike.
  double sum = 0, squares = 0;
  DeviceSumAndSquares(values, total, &sum, &squares, &device_workspace_);
  if (!std::isfinite(sum) || !std::isfinite(squares)) {
    const vector<float> host = device_values_.DownloadVector<float>(total);
    pos = 0;
    for (size_t b = 0; b < m; ++b) {
      const int64_t count = selections[b].all ? params[b]->count()
                                              : static_cast<int64_t>(selections[b].indices.size());
      CheckFinite(b, host.data() + pos, count);
      pos += count;
    }
  }
  const float inv = 1.f / comm_->size();
  const bool divide = param_.score() != SyncParameter::MAGNITUDE;
  pos = 0;
  for (size_t b = 0; b < m; ++b) {
    const int64_t n = params[b]->count();
    float* diff = params[b]->mutable_gpu_diff();
    float* v = device_residual_[b].as<float>();
    float* known = known_importance_.empty() ? nullptr : device_known_importance_[b].as<float>();
    if (selections[b].all) {
      // diff = sum * (1/N): one rounding, as on the host.
      math::gpu_copy(n, values + pos, diff);
      math::gpu_scal(n, inv, diff);
      // Sent whole: v is cleared, u carries on (see ReduceSelected).
      math::gpu_set(n, 0.f, v);
      DeviceFillInt(device_last_sent_[b].as<int32_t>(), n, current_iter());
      if (known) {
        DeviceRecordImportance(diff, params[b]->gpu_data(), nullptr, n, param_.epsilon(), divide,
                               known);
      }
      pos += n;
    } else {
      const int64_t k = static_cast<int64_t>(selections[b].indices.size());
      const int32_t* at = indices + index_start[b];
      math::gpu_set(n, 0.f, diff);
      DeviceScatter(values + pos, at, k, inv, diff);
      float* u = momentum_correction_ ? device_velocity_[b].as<float>() : nullptr;
      DeviceClearAt(at, k, v, u);
      DeviceMarkSent(at, k, current_iter(), device_last_sent_[b].as<int32_t>());
      if (limit) {
        const double rate = StepRate(b);
        if (rate > 0) {
          double w_sum = 0, w_squares = 0;
          DeviceSumAndSquares(params[b]->gpu_data(), n, &w_sum, &w_squares, &device_workspace_);
          const float rms = static_cast<float>(std::sqrt(w_squares / std::max<int64_t>(n, 1)));
          stats_.AddCapped(DeviceRateLimit(at, k, params[b]->gpu_data(), rms,
                                           static_cast<float>(param_.max_relative_step() / rate),
                                           device_local_values_.as<float>() + pos, diff, v,
                                           &device_workspace_));
        }
      }
      if (known) DeviceRecordImportance(diff, params[b]->gpu_data(), at, k, param_.epsilon(), divide, known);
      pos += k;
    }
  }
  host_behind_ = true;
  stats_.AddTime(ExchangeStats::SCATTER, DeviceSecondsSince(start));
  return total;
}

void ResidualExchange::MarkSentOnDevice(size_t b, const int32_t* indices, int64_t count) {
  CHECK(on_device_);
  host_behind_ = true;
  DeviceMarkSent(indices, count, current_iter(), device_last_sent_[b].as<int32_t>());
}

vector<int32_t> ResidualExchange::StochasticDrawOnDevice(size_t b, double expected,
                                                         uint64_t stream) {
  const int64_t n = static_cast<int64_t>(residual_[b].size());
  device_indices_.Reserve(std::max<int64_t>(n, 1) * sizeof(int32_t));
  const int64_t count = DeviceStochasticDraw(
      device_last_sent_[b].as<int32_t>(), device_known_importance_[b].as<float>(), n,
      current_iter(), expected, stream, device_indices_.as<int32_t>(), &device_workspace_);
  return device_indices_.DownloadVector<int32_t>(static_cast<size_t>(count));
}

void ResidualExchange::LastSentMinAndSumOnDevice(size_t b, int64_t* min, double* sum) const {
  auto* workspace = const_cast<DeviceSelectionWorkspace*>(&device_workspace_);
  int64_t total = 0;
  DeviceMinAndSum(device_last_sent_[b].as<int32_t>(), static_cast<int64_t>(last_sent_[b].size()), min,
                  &total, workspace);
  if (last_sent_[b].empty()) *min = current_iter_;
  *sum = static_cast<double>(total);
}

float* ResidualExchange::MutableDeviceResidual(size_t b) {
  CHECK(on_device_);
  host_behind_ = true;
  return device_residual_[b].as<float>();
}

float* ResidualExchange::MutableDeviceVelocity(size_t b) {
  CHECK(on_device_);
  host_behind_ = true;
  return momentum_correction_ ? device_velocity_[b].as<float>() : nullptr;
}

void ResidualExchange::RecordDeviceBytes(const char* op, int64_t before) {
  if (device_comm_ == nullptr) return;  // comm_ itself counted them
  // The device communicator's bytes go into comm_'s counters, where the step's
  // accounting (BytesSentSoFar) reads them.
  CommStats::Entry& entry = comm_->mutable_stats().by_op[op];
  ++entry.calls;
  entry.bytes_sent += device_comm_->stats().total_bytes_sent() - before;
}

void ResidualExchange::BroadcastMessageOnDevice(std::string* message, int root,
                                                Communicator* device) {
  // NCCL moves device memory only. The message is a few kilobytes made and read on
  // the host, so the staging copies cost little; what it buys is one transport for
  // all the step's data, the one NCCL picked for the network (MPI stays the control
  // plane: bootstrap, barriers, stop flags).
  const int64_t before = device->stats().total_bytes_sent();
  const bool is_root = comm_->rank() == root;
  int64_t length = static_cast<int64_t>(message->size());
  device_message_.Reserve(sizeof(length));
  if (is_root) device_message_.Upload(&length, sizeof(length));
  device->Broadcast(device_message_.data(), sizeof(length), root);
  device_message_.Download(&length, sizeof(length));
  CAFFE_REQUIRE(length >= 0) << "message broadcast from rank " << root << ": negative length "
                             << length;
  message->resize(length);
  device_message_.Reserve(length);
  if (is_root) device_message_.Upload(message->data(), length);
  device->Broadcast(device_message_.data(), length, root);
  if (!is_root) device_message_.Download(message->data(), length);
  RecordDeviceBytes("broadcast_device", before);
}

void ResidualExchange::AllReduceOnDevice(float* values, int64_t count) {
  if (comm_->size() < 2 || count == 0) return;
  if (Communicator* device = DeviceCommunicator()) {
    const int64_t before = device->stats().total_bytes_sent();
    device->AllReduceSum(values, count);
    RecordDeviceBytes("allreduce_device", before);
    return;
  }
  // No device communicator: through host memory and comm_.
  values_.resize(count);
  CUDA_CHECK(cudaMemcpy(values_.data(), values, count * sizeof(float), cudaMemcpyDeviceToHost));
  comm_->AllReduceSum(values_.data(), count);
  CUDA_CHECK(cudaMemcpy(values, values_.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

void ResidualExchange::AllGatherOnDevice(const void* in, int64_t bytes, void* out) {
  const int n = comm_->size();
  if (n < 2) {
    if (bytes > 0 && in != out) CUDA_CHECK(cudaMemcpy(out, in, bytes, cudaMemcpyDeviceToDevice));
    return;
  }
  if (Communicator* device = DeviceCommunicator()) {
    const int64_t before = device->stats().total_bytes_sent();
    device->AllGatherBytes(in, bytes, out);
    RecordDeviceBytes("allgather_device", before);
    return;
  }
  std::vector<char> send(bytes), receive(bytes * n);
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(send.data(), in, bytes, cudaMemcpyDeviceToHost));
  comm_->AllGatherBytes(send.data(), bytes, receive.data());
  if (bytes > 0) {
    CUDA_CHECK(cudaMemcpy(out, receive.data(), bytes * n, cudaMemcpyHostToDevice));
  }
}

}  // namespace caffe

#endif  // USE_CUDA
