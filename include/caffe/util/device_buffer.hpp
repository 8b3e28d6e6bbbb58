// A block of device memory owned by one object (CUDA builds only): scratch that grows
// and is reused across steps, and the plain way for host code (tests included) to
// put arrays on the device without including CUDA headers. Blob and SyncedMemory are
// for data with a host side; this is for device-only arrays such as index lists and
// CUB's temporary storage.
#ifndef CAFFE_UTIL_DEVICE_BUFFER_HPP_
#define CAFFE_UTIL_DEVICE_BUFFER_HPP_

#ifdef USE_CUDA

#include <cstddef>
#include <vector>

namespace caffe {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { Reserve(bytes); }
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Makes room for at least `bytes` on the current device. Growing discards the
  // contents (callers use it as scratch, so there is nothing to keep).
  void Reserve(size_t bytes);
  size_t capacity() const { return capacity_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* as() { return static_cast<T*>(data_); }
  template <typename T>
  const T* as() const { return static_cast<const T*>(data_); }

  // Synchronous copies between host memory and the start of the buffer; Upload
  // reserves what it needs first.
  void Upload(const void* host, size_t bytes);
  void Download(void* host, size_t bytes) const;

  template <typename T>
  void UploadVector(const std::vector<T>& host) { Upload(host.data(), host.size() * sizeof(T)); }
  template <typename T>
  std::vector<T> DownloadVector(size_t count) const {
    std::vector<T> host(count);
    Download(host.data(), count * sizeof(T));
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace caffe

#endif  // USE_CUDA
#endif  // CAFFE_UTIL_DEVICE_BUFFER_HPP_
