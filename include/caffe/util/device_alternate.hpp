// CUDA plumbing shared by GPU code: error checks and "is there a GPU at all".
// In CPU-only builds only HasCudaDevice() exists, and it answers false.
#ifndef CAFFE_UTIL_DEVICE_ALTERNATE_HPP_
#define CAFFE_UTIL_DEVICE_ALTERNATE_HPP_

#include <glog/logging.h>

#ifdef USE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                   \
  do {                                                                     \
    cudaError_t status_ = (call);                                          \
    CHECK_EQ(status_, cudaSuccess) << " CUDA: " << cudaGetErrorString(status_); \
  } while (0)

#define CUBLAS_CHECK(call)                                         \
  do {                                                             \
    cublasStatus_t status_ = (call);                               \
    CHECK_EQ(status_, CUBLAS_STATUS_SUCCESS) << " cuBLAS status " << status_; \
  } while (0)

namespace caffe {
// Threads per block for the project's own elementwise kernels.
constexpr int kCudaThreads = 256;
inline int CudaBlocks(long long n) {
  return static_cast<int>((n + kCudaThreads - 1) / kCudaThreads);
}
// Blocks for a grid-stride kernel over n items, the one launch shape every kernel of
// the project uses: enough to fill an H100/H200 many times over (past that, each
// thread loops over several items; a larger grid only adds scheduling work), at
// least one so a launch for n == 0 is still valid, and computed in 64 bits (CudaBlocks
// narrows to int, which a blob of more than 2^39 elements would overflow).
constexpr long long kCudaMaxBlocks = 16384;
inline int CudaGridBlocks(long long n) {
  const long long wanted = (n + kCudaThreads - 1) / kCudaThreads;
  return static_cast<int>(wanted < 1 ? 1 : (wanted > kCudaMaxBlocks ? kCudaMaxBlocks : wanted));
}
}  // namespace caffe
#endif

namespace caffe {
// Number of usable CUDA devices; 0 in CPU-only builds and when the driver is missing
// (cudaGetDeviceCount then fails with an error and leaves its output unwritten).
int CudaDeviceCount();
inline bool HasCudaDevice() { return CudaDeviceCount() > 0; }
// Waits for all work queued on the current device (a no-op without CUDA). Host
// clocks around kernel launches measure only the launch; timers call this first.
void SynchronizeDevice();
}  // namespace caffe

#endif  // CAFFE_UTIL_DEVICE_ALTERNATE_HPP_
