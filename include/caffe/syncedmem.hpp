// One buffer with a host copy and (in CUDA builds) a device copy. Copies happen
// lazily when the other side is read; `mutable_*` moves the head to that side.
#ifndef CAFFE_SYNCEDMEM_HPP_
#define CAFFE_SYNCEDMEM_HPP_

#include <cstddef>
#include <cstdint>

#ifdef USE_CUDA
#include <cuda_runtime.h>
#endif

namespace caffe {

// Bytes every SyncedMemory of this process has copied across PCIe since it started,
// each way (the data layers' asynchronous pushes included). A GPU training step in
// the steady state should move only its input batch up and its loss scalars down.
struct HostDeviceTransfers {
  uint64_t to_device = 0;
  uint64_t to_host = 0;
};
HostDeviceTransfers SyncedMemoryTransfers();

class SyncedMemory {
 public:
  enum Head { UNINITIALIZED, AT_CPU, AT_GPU, SYNCED };

  SyncedMemory() = default;
  explicit SyncedMemory(size_t size) : size_(size) {}
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  const void* cpu_data();
  void* mutable_cpu_data();
  // Points the host side at memory owned by someone else (no copy, not freed here).
  void set_cpu_data(void* data);
  const void* gpu_data();
  void* mutable_gpu_data();
  void set_gpu_data(void* data);

#ifdef USE_CUDA
  // Starts copying the host side to the device on `stream` and marks both sides
  // synced; the caller synchronises the stream before the device copy is read. Used
  // by the data layers' prefetch thread, so the next batch's upload overlaps the
  // current iteration (the host side is pinned when a GPU is present).
  void AsyncGpuPush(cudaStream_t stream);
#endif

  Head head() const { return head_; }
  size_t size() const { return size_; }

 private:
  void ToCpu();
  void ToGpu();

  void* cpu_ptr_ = nullptr;
  void* gpu_ptr_ = nullptr;
  size_t size_ = 0;
  Head head_ = UNINITIALIZED;
  bool own_cpu_data_ = false;
  bool cpu_pinned_ = false;
  bool own_gpu_data_ = false;
  int gpu_device_ = -1;
};

}  // namespace caffe

#endif  // CAFFE_SYNCEDMEM_HPP_
