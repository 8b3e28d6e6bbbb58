#include "caffe/util/device_buffer.hpp"

#ifdef USE_CUDA

#include <utility>

#include "caffe/util/device_alternate.hpp"

namespace caffe {

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void DeviceBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  if (data_ != nullptr) {
    // cudaFree waits for the device, so no queued kernel still uses the old block.
    CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    capacity_ = 0;
  }
  CUDA_CHECK(cudaMalloc(&data_, bytes));
  capacity_ = bytes;
}

void DeviceBuffer::Upload(const void* host, size_t bytes) {
  Reserve(bytes);
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::Download(void* host, size_t bytes) const {
  CHECK_LE(bytes, capacity_) << "download of more than the buffer holds";
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost));
}

}  // namespace caffe

#endif  // USE_CUDA
