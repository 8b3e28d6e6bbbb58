#include "caffe/util/device_alternate.hpp"

namespace caffe {

int CudaDeviceCount() {
#ifdef USE_CUDA
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no driver" error
      return 0;
    }
    return n;
  }();
  return count;
#else
  return 0;
#endif
}

void SynchronizeDevice() {
#ifdef USE_CUDA
  if (CudaDeviceCount() > 0) CUDA_CHECK(cudaDeviceSynchronize());
#endif
}

}  // namespace caffe
