#ifdef USE_CUDNN

#include "caffe/util/cudnn.hpp"

#include <climits>
#include <map>

#include "caffe/util/device_alternate.hpp"

namespace caffe {
namespace cudnn {

const float kOne = 1.f;
const float kZero = 0.f;

namespace {

int CurrentDevice() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

}  // namespace

// Handles and workspaces are kept for the life of the thread and never destroyed, as
// the cuBLAS handles in math_functions.cu are: destroying them from a thread_local
// destructor at process exit can run after the CUDA runtime has shut down.
cudnnHandle_t Handle() {
  thread_local std::map<int, cudnnHandle_t> handles;
  const int device = CurrentDevice();
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cudnnHandle_t handle = nullptr;
  CUDNN_CHECK(cudnnCreate(&handle));
  handles[device] = handle;
  return handle;
}

void* Workspace(size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  thread_local std::map<int, Buffer> buffers;
  if (bytes == 0) return nullptr;
  Buffer& buffer = buffers[CurrentDevice()];
  if (buffer.bytes < bytes) {
    // cudaFree waits for the device, so no queued kernel still uses the old buffer.
    if (buffer.data != nullptr) CUDA_CHECK(cudaFree(buffer.data));
    buffer.data = nullptr;
    buffer.bytes = 0;
    CUDA_CHECK(cudaMalloc(&buffer.data, bytes));
    buffer.bytes = bytes;
  }
  return buffer.data;
}

bool FitsInt(int64_t n, int64_t c, int64_t h, int64_t w) {
  return n <= INT_MAX && c <= INT_MAX && h <= INT_MAX && w <= INT_MAX &&
         n * c * h * w <= INT_MAX;
}

void SetTensor4d(TensorDescriptor* desc, int n, int c, int h, int w) {
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc->get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c,
                                         h, w));
}

void SetFilter4d(FilterDescriptor* desc, int k, int c, int h, int w) {
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc->get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c,
                                         h, w));
}

void Activation::Describe(int64_t count) {
  if (!mode_described_) {
    CUDNN_CHECK(cudnnSetActivationDescriptor(activation_.get(), mode_, CUDNN_PROPAGATE_NAN, 0.0));
    mode_described_ = true;
  }
  if (described_count_ == count) return;
  // Elementwise: any packed shape with the right count will do.
  SetTensor4d(&tensor_, 1, 1, 1, static_cast<int>(count));
  described_count_ = count;
}

void Activation::Forward(int64_t count, const float* x, float* y) {
  Describe(count);
  CUDNN_CHECK(cudnnActivationForward(Handle(), activation_.get(), &kOne, tensor_.get(), x, &kZero,
                                     tensor_.get(), y));
}

void Activation::Backward(int64_t count, const float* y, const float* dy, const float* x,
                          float* dx) {
  Describe(count);
  CUDNN_CHECK(cudnnActivationBackward(Handle(), activation_.get(), &kOne, tensor_.get(), y,
                                      tensor_.get(), dy, tensor_.get(), x, &kZero, tensor_.get(),
                                      dx));
}

}  // namespace cudnn
}  // namespace caffe

#endif  // USE_CUDNN
