#include "caffe/syncedmem.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <unistd.h>

#include "caffe/common.hpp"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/host_memory_limit.hpp"

namespace caffe {

namespace {

std::atomic<size_t> host_memory_limit{0};
std::atomic<size_t> host_memory_in_use{0};
std::atomic<uint64_t> bytes_to_device{0};
std::atomic<uint64_t> bytes_to_host{0};

// Reserves `size` bytes against the limit; throws caffe::Error when they do not fit.
void ReserveHost(size_t size) {
  const size_t limit = host_memory_limit.load(std::memory_order_relaxed);
  const size_t before = host_memory_in_use.fetch_add(size, std::memory_order_relaxed);
  if (limit != 0 && (before + size < before || before + size > limit)) {
    host_memory_in_use.fetch_sub(size, std::memory_order_relaxed);
    ErrorBuilder() << "a blob of " << size << " bytes would exceed the host memory limit of "
                   << limit << " bytes (" << before << " in use)";
  }
}

// 64-byte alignment suits AVX2/AVX-512 loads and oneDNN's preferred layout.
void* AllocateHost(size_t size, bool* pinned) {
  *pinned = false;
  if (size == 0) return nullptr;
  ReserveHost(size);
#ifdef USE_CUDA
  // Pinned host memory makes host-device copies asynchronous-capable; only worth it
  // when a device is actually present.
  if (HasCudaDevice()) {
    void* ptr = nullptr;
    if (cudaMallocHost(&ptr, size) == cudaSuccess) {
      *pinned = true;
      return ptr;
    }
    // The failure is now the thread's last CUDA error; clear it, or the next
    // CUDA_CHECK(cudaPeekAtLastError()) after an unrelated kernel launch reports it.
    cudaGetLastError();
  }
#endif
  void* ptr = nullptr;
  size_t rounded = (size + 63) / 64 * 64;
  // A size near SIZE_MAX wraps when rounded up: refuse it rather than allocate 0 bytes.
  if (rounded >= size) ptr = std::aligned_alloc(64, rounded);
  if (ptr == nullptr) {
    host_memory_in_use.fetch_sub(size, std::memory_order_relaxed);
    // Out of memory is the user's net being too large for the machine, not a bug.
    ErrorBuilder() << "host allocation of " << size << " bytes failed (out of memory)";
  }
  return ptr;
}

void FreeHost(void* ptr, size_t size, bool pinned) {
  host_memory_in_use.fetch_sub(size, std::memory_order_relaxed);
#ifdef USE_CUDA
  if (pinned) {
    cudaFreeHost(ptr);
    return;
  }
#else
  (void)pinned;
#endif
  std::free(ptr);
}

}  // namespace

HostDeviceTransfers SyncedMemoryTransfers() {
  HostDeviceTransfers transfers;
  transfers.to_device = bytes_to_device.load(std::memory_order_relaxed);
  transfers.to_host = bytes_to_host.load(std::memory_order_relaxed);
  return transfers;
}

void SetHostMemoryLimit(size_t bytes) { host_memory_limit.store(bytes); }
size_t HostMemoryLimit() { return host_memory_limit.load(); }
size_t HostMemoryInUse() { return host_memory_in_use.load(); }

bool HostAllocationFits(int64_t count, size_t element_size) {
  if (count < 0) return false;
  if (count == 0 || element_size == 0) return true;
  const uint64_t elements = static_cast<uint64_t>(count);
  if (elements > std::numeric_limits<size_t>::max() / element_size) return false;
  const size_t bytes = static_cast<size_t>(elements) * element_size;
  const size_t limit = host_memory_limit.load(std::memory_order_relaxed);
  const size_t in_use = host_memory_in_use.load(std::memory_order_relaxed);
  if (limit != 0 && (in_use > limit || bytes > limit - in_use)) return false;
  // Read once: layers ask on every Reshape, and the machine's memory does not change.
  static const size_t physical_pages = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 ? static_cast<size_t>(pages) : 0;
  }();
  static const size_t page_size = [] {
    const long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? static_cast<size_t>(size) : 0;
  }();
  return physical_pages == 0 || page_size == 0 || bytes / page_size <= physical_pages;
}

SyncedMemory::~SyncedMemory() {
  if (cpu_ptr_ && own_cpu_data_) FreeHost(cpu_ptr_, size_, cpu_pinned_);
#ifdef USE_CUDA
  if (gpu_ptr_ && own_gpu_data_) cudaFree(gpu_ptr_);
#endif
}

void SyncedMemory::ToCpu() {
  switch (head_) {
    case UNINITIALIZED:
      cpu_ptr_ = AllocateHost(size_, &cpu_pinned_);
      if (cpu_ptr_) std::memset(cpu_ptr_, 0, size_);
      own_cpu_data_ = true;
      head_ = AT_CPU;
      break;
    case AT_GPU:
#ifdef USE_CUDA
      if (cpu_ptr_ == nullptr) {
        cpu_ptr_ = AllocateHost(size_, &cpu_pinned_);
        own_cpu_data_ = true;
      }
      CUDA_CHECK(cudaMemcpy(cpu_ptr_, gpu_ptr_, size_, cudaMemcpyDeviceToHost));
      bytes_to_host.fetch_add(size_, std::memory_order_relaxed);
      head_ = SYNCED;
#else
      LOG(FATAL) << "device memory in a CPU-only build";
#endif
      break;
    case AT_CPU:
    case SYNCED:
      break;
  }
}

void SyncedMemory::ToGpu() {
#ifdef USE_CUDA
  switch (head_) {
    case UNINITIALIZED:
      CUDA_CHECK(cudaGetDevice(&gpu_device_));
      CUDA_CHECK(cudaMalloc(&gpu_ptr_, size_ > 0 ? size_ : 1));
      CUDA_CHECK(cudaMemset(gpu_ptr_, 0, size_));
      own_gpu_data_ = true;
      head_ = AT_GPU;
      break;
    case AT_CPU:
      if (gpu_ptr_ == nullptr) {
        CUDA_CHECK(cudaGetDevice(&gpu_device_));
        CUDA_CHECK(cudaMalloc(&gpu_ptr_, size_ > 0 ? size_ : 1));
        own_gpu_data_ = true;
      }
      if (size_ > 0) CUDA_CHECK(cudaMemcpy(gpu_ptr_, cpu_ptr_, size_, cudaMemcpyHostToDevice));
      bytes_to_device.fetch_add(size_, std::memory_order_relaxed);
      head_ = SYNCED;
      break;
    case AT_GPU:
    case SYNCED:
      break;
  }
#else
  LOG(FATAL) << "GPU memory requested in a CPU-only build";
#endif
}

#ifdef USE_CUDA
void SyncedMemory::AsyncGpuPush(cudaStream_t stream) {
  CHECK(head_ == AT_CPU || head_ == SYNCED) << "AsyncGpuPush needs fresh host data";
  if (gpu_ptr_ == nullptr) {
    CUDA_CHECK(cudaGetDevice(&gpu_device_));
    CUDA_CHECK(cudaMalloc(&gpu_ptr_, size_ > 0 ? size_ : 1));
    own_gpu_data_ = true;
  }
  if (size_ > 0) {
    CUDA_CHECK(cudaMemcpyAsync(gpu_ptr_, cpu_ptr_, size_, cudaMemcpyHostToDevice, stream));
    bytes_to_device.fetch_add(size_, std::memory_order_relaxed);
  }
  head_ = SYNCED;
}
#endif

const void* SyncedMemory::cpu_data() {
  ToCpu();
  return cpu_ptr_;
}

void* SyncedMemory::mutable_cpu_data() {
  ToCpu();
  head_ = AT_CPU;
  return cpu_ptr_;
}

void SyncedMemory::set_cpu_data(void* data) {
  CHECK(data || size_ == 0);
  if (own_cpu_data_ && cpu_ptr_) FreeHost(cpu_ptr_, size_, cpu_pinned_);
  cpu_ptr_ = data;
  cpu_pinned_ = false;
  own_cpu_data_ = false;
  head_ = AT_CPU;
}

const void* SyncedMemory::gpu_data() {
  ToGpu();
  return gpu_ptr_;
}

void* SyncedMemory::mutable_gpu_data() {
  ToGpu();
  head_ = AT_GPU;
  return gpu_ptr_;
}

void SyncedMemory::set_gpu_data(void* data) {
#ifdef USE_CUDA
  if (own_gpu_data_ && gpu_ptr_) cudaFree(gpu_ptr_);
  gpu_ptr_ = data;
  own_gpu_data_ = false;
  head_ = AT_GPU;
#else
  (void)data;
  LOG(FATAL) << "GPU memory requested in a CPU-only build";
#endif
}

}  // namespace caffe
