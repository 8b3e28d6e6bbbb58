// TOPK_ALLGATHER on device residuals (GPU mode): the host step of
// topk_allgather_exchange.cpp with the kernels of device_selection.hpp. Each rank's
// block (k values, then k int32 indices, blob after blob) is built on the device and
// all-gathered (NCCL when built in); the blocks are added in rank order, as on the host.
#include "caffe/sync/topk_allgather_exchange.hpp"

#ifdef USE_CUDA

#include <chrono>

#include "caffe/sync/device_selection.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

int64_t TopkAllgatherExchange::ExchangeSparseOnDevice(int iter, const vector<Blob*>& params,
                                                      float density) {
  const size_t m = params.size();
  const int n_ranks = comm_->size();
  auto start = std::chrono::steady_clock::now();
  int64_t k_total = 0;
  const vector<int64_t> k = BlockSizes(params, density, &k_total);
  vector<Selection> dense(m);
  const int64_t block_bytes = 8 * k_total;
  device_send_.Reserve(block_bytes);
  chosen_.Reserve(k_total * sizeof(int32_t));
  float* values = device_send_.as<float>();
  int32_t* indices = reinterpret_cast<int32_t*>(device_send_.as<char>() + 4 * k_total);
  int32_t* chosen = chosen_.as<int32_t>();
  int64_t offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) {
      dense[b].all = true;
      continue;
    }
    const int64_t n = params[b]->count();
    magnitude_.Reserve(n * sizeof(float));
    const float* v = ResidualData(b);
    DeviceAbs(v, n, magnitude_.as<float>());
    float smallest = 0;
    const int64_t picked = DeviceSelectTopK(magnitude_.as<float>(), n, k[b], chosen + offset,
                                            &smallest, device_workspace());
    CHECK_EQ(picked, k[b]);
    offset += k[b];
  }
  stats_.AddTime(ExchangeStats::SELECT, DeviceSecondsSince(start));

  start = std::chrono::steady_clock::now();
  offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (IsDenseBlob(b)) continue;
    DeviceGather(ResidualData(b), chosen + offset, k[b], values + offset);
    offset += k[b];
  }
  if (k_total > 0) {
    CUDA_CHECK(cudaMemcpy(indices, chosen, k_total * sizeof(int32_t), cudaMemcpyDeviceToDevice));
  }
  stats_.AddTime(ExchangeStats::GATHER, DeviceSecondsSince(start));

  // Small blobs travel densely by all-reduce (this also zeroes the sparse blobs'
  // diffs, which the gathered selections then fill).
  const int64_t dense_sent = ReduceSelected(params, dense);

  start = std::chrono::steady_clock::now();
  device_receive_.Reserve(block_bytes * n_ranks);
  AllGatherOnDevice(device_send_.data(), block_bytes, device_receive_.data());
  stats_.AddTime(ExchangeStats::ALLGATHER, DeviceSecondsSince(start));

  start = std::chrono::steady_clock::now();
  const float inv = 1.f / n_ranks;
  for (int r = 0; r < n_ranks; ++r) {
    const char* block = device_receive_.as<char>() + r * block_bytes;
    const float* vals = reinterpret_cast<const float*>(block);
    const int32_t* idx = reinterpret_cast<const int32_t*>(block + 4 * k_total);
    offset = 0;
    for (size_t b = 0; b < m; ++b) {
      if (dense[b].all) continue;
      DeviceScatterAdd(vals + offset, idx + offset, k[b], inv, params[b]->mutable_gpu_diff());
      offset += k[b];
    }
  }
  offset = 0;
  for (size_t b = 0; b < m; ++b) {
    if (dense[b].all) continue;
    DeviceClearAt(chosen + offset, k[b], MutableDeviceResidual(b), MutableDeviceVelocity(b));
    MarkSentOnDevice(b, chosen + offset, k[b]);
    offset += k[b];
  }
  stats_.AddTime(ExchangeStats::SCATTER, DeviceSecondsSince(start));

  RecordBlobs(params, k);
  (void)iter;
  return k_total + dense_sent;
}

}  // namespace caffe

#endif  // USE_CUDA
