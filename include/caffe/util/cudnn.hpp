// cuDNN plumbing shared by the CUDNN engine's layers (legacy v7-style API, still in
// cuDNN 9): the status check, one handle per host thread and device, a workspace the
// layers of a thread share, and owning wrappers of the descriptors with setters for
// the packed NCHW layout every Blob has. Only in builds with cuDNN (USE_CUDNN).
#ifndef CAFFE_UTIL_CUDNN_HPP_
#define CAFFE_UTIL_CUDNN_HPP_

#ifdef USE_CUDNN

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include <glog/logging.h>

#define CUDNN_CHECK(call)                                                       \
  do {                                                                          \
    cudnnStatus_t status_ = (call);                                             \
    CHECK_EQ(status_, CUDNN_STATUS_SUCCESS) << " cuDNN: " << cudnnGetErrorString(status_); \
  } while (0)

namespace caffe {
namespace cudnn {

// The handle of the calling thread for the current device, created on first use. It
// runs on the default stream, like the project's kernels and cuBLAS calls, so layers
// need no synchronisation among themselves.
cudnnHandle_t Handle();

// Device scratch of at least `bytes` for the calling thread and current device. Layers
// run one after another on a thread, so they share one buffer, sized by the largest
// request instead of one buffer per layer (a ResNet has dozens of convolutions). The
// pointer stays valid until the next call that asks for more. nullptr for 0 bytes.
void* Workspace(size_t bytes);

// True when every dimension and the element count fit cuDNN's int arguments.
bool FitsInt(int64_t n, int64_t c, int64_t h, int64_t w);

// A descriptor created on first use and destroyed with its owner: layers hold them
// from construction, but a layer that only ever runs on the CPU never calls cuDNN.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (handle_ != nullptr) Destroy(handle_);
  }
  T get() {
    if (handle_ == nullptr) CUDNN_CHECK(Create(&handle_));
    return handle_;
  }

 private:
  T handle_ = nullptr;
};

using TensorDescriptor =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = Descriptor<cudnnConvolutionDescriptor_t,
                                         cudnnCreateConvolutionDescriptor,
                                         cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                     cudnnDestroyPoolingDescriptor>;
using LRNDescriptor =
    Descriptor<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor>;
using ActivationDescriptor = Descriptor<cudnnActivationDescriptor_t,
                                        cudnnCreateActivationDescriptor,
                                        cudnnDestroyActivationDescriptor>;

// A float tensor n x c x h x w, packed row-major (a Blob's layout).
void SetTensor4d(TensorDescriptor* desc, int n, int c, int h, int w);
// Float filters k x c x h x w, packed row-major (a convolution's weight blob).
void SetFilter4d(FilterDescriptor* desc, int k, int c, int h, int w);

// An elementwise activation (ReLU, sigmoid, tanh) over `count` packed floats: what the
// CUDNN neuron layers share. Backward reads y, dy and x, and writes dx (overwritten);
// cuDNN allows dx == dy, and the layers' in-place use passes y as x, which is exact for
// these modes (sigmoid and tanh read only y; ReLU's y > 0 exactly where x > 0).
class Activation {
 public:
  explicit Activation(cudnnActivationMode_t mode) : mode_(mode) {}
  void Forward(int64_t count, const float* x, float* y);
  void Backward(int64_t count, const float* y, const float* dy, const float* x, float* dx);

 private:
  void Describe(int64_t count);

  cudnnActivationMode_t mode_;
  bool mode_described_ = false;
  int64_t described_count_ = -1;
  ActivationDescriptor activation_;
  TensorDescriptor tensor_;
};

// The blend factors cuDNN reads from host memory: result = alpha * op + beta * dest.
// kOne as beta accumulates into dest (weight diffs); kZero overwrites it.
extern const float kOne;
extern const float kZero;

}  // namespace cudnn
}  // namespace caffe

#endif  // USE_CUDNN
#endif  // CAFFE_UTIL_CUDNN_HPP_
