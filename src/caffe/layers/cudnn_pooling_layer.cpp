#ifdef USE_CUDNN

#include "caffe/layers/cudnn_pooling_layer.hpp"

#include "caffe/util/cudnn.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

struct CudnnPoolingLayer::State {
  cudnn::TensorDescriptor bottom, top;
  cudnn::PoolingDescriptor pooling;
  vector<int64_t> described_shape;  // the bottom shape the descriptors hold
  // MAX: the forward output as cuDNN wrote it. cuDNN's max backward finds each window's
  // winner by comparing x with y, so it needs y unchanged, but a later in-place layer
  // (Dropout, ReLU, BatchNorm on the pooled blob) may rewrite top data before backward;
  // the reference path keeps argmax indices instead and is immune to that.
  Blob y;
};

CudnnPoolingLayer::CudnnPoolingLayer(const LayerParameter& param)
    : PoolingLayer(param), cudnn_(std::make_unique<State>()) {}

CudnnPoolingLayer::~CudnnPoolingLayer() = default;

bool CudnnPoolingLayer::uses_cudnn(const vector<Blob*>& top) const {
  if (method_ != PoolingParameter::MAX && method_ != PoolingParameter::AVE) return false;
  if (top.size() != 1) return false;  // the MAX mask top is Caffe's own
  // cuDNN's output size: floor((in + 2 pad - kernel) / stride) + 1. Caffe's size never
  // falls below it (its rounding and its last-window rule only ever add a window that
  // starts inside the image), so equal sizes mean identical windows.
  const int64_t floor_h = (static_cast<int64_t>(height_) + 2 * pad_h_ - kernel_h_) / stride_h_ + 1;
  const int64_t floor_w = (static_cast<int64_t>(width_) + 2 * pad_w_ - kernel_w_) / stride_w_ + 1;
  if (pooled_height_ != floor_h || pooled_width_ != floor_w) return false;
  return cudnn::FitsInt(planes_, 1, height_, width_);
}

void CudnnPoolingLayer::Describe(const Blob& bottom) {
  State& s = *cudnn_;
  if (s.described_shape == bottom.shape()) return;
  const int num = static_cast<int>(bottom.shape(0)), channels = static_cast<int>(bottom.shape(1));
  cudnn::SetTensor4d(&s.bottom, num, channels, height_, width_);
  cudnn::SetTensor4d(&s.top, num, channels, pooled_height_, pooled_width_);
  // Global pooling's kernel is the image, so the pooling descriptor follows the shape too.
  const cudnnPoolingMode_t mode = method_ == PoolingParameter::MAX
                                      ? CUDNN_POOLING_MAX_DETERMINISTIC
                                      : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(s.pooling.get(), mode, CUDNN_NOT_PROPAGATE_NAN,
                                          kernel_h_, kernel_w_, pad_h_, pad_w_, stride_h_,
                                          stride_w_));
  s.described_shape = bottom.shape();
}

void CudnnPoolingLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!uses_cudnn(top)) {
    PoolingLayer::Forward_gpu(bottom, top);
    return;
  }
  Describe(*bottom[0]);
  State& s = *cudnn_;
  float* y = top[0]->mutable_gpu_data();
  CUDNN_CHECK(cudnnPoolingForward(cudnn::Handle(), s.pooling.get(), &cudnn::kOne, s.bottom.get(),
                                  bottom[0]->gpu_data(), &cudnn::kZero, s.top.get(), y));
  if (method_ == PoolingParameter::MAX) {
    s.y.ReshapeLike(*top[0]);
    math::gpu_copy(top[0]->count(), y, s.y.mutable_gpu_data());
  }
}

void CudnnPoolingLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  if (!uses_cudnn(top)) {
    PoolingLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  Describe(*bottom[0]);
  State& s = *cudnn_;
  // AVE reads no y; MAX reads the copy kept by forward (see State::y).
  if (method_ == PoolingParameter::MAX) {
    CHECK_EQ(s.y.count(), top[0]->count())
        << "MAX pooling backward on the GPU without a GPU forward";
  }
  const float* y = method_ == PoolingParameter::MAX ? s.y.gpu_data() : top[0]->gpu_data();
  CUDNN_CHECK(cudnnPoolingBackward(cudnn::Handle(), s.pooling.get(), &cudnn::kOne, s.top.get(),
                                   y, s.top.get(), top[0]->gpu_diff(),
                                   s.bottom.get(), bottom[0]->gpu_data(), &cudnn::kZero,
                                   s.bottom.get(), bottom[0]->mutable_gpu_diff()));
}

}  // namespace caffe

#endif  // USE_CUDNN
