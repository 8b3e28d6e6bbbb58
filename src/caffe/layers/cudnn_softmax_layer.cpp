#ifdef USE_CUDNN

#include "caffe/layers/cudnn_softmax_layer.hpp"

#include "caffe/util/cudnn.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

struct CudnnSoftmaxLayer::State {
  cudnn::TensorDescriptor tensor;  // bottom and top have one shape
  int64_t outer = -1, channels = -1, inner = -1;  // what `tensor` describes
  Blob scratch;  // in place: a copy of the bottom data (forward) or top diff (backward)
};

CudnnSoftmaxLayer::CudnnSoftmaxLayer(const LayerParameter& param)
    : SoftmaxLayer(param), cudnn_(std::make_unique<State>()) {}

CudnnSoftmaxLayer::~CudnnSoftmaxLayer() = default;

bool CudnnSoftmaxLayer::uses_cudnn() const {
  return channels_ > 0 && cudnn::FitsInt(outer_, channels_, inner_, 1);
}

void CudnnSoftmaxLayer::Describe() {
  State& s = *cudnn_;
  if (s.outer == outer_ && s.channels == channels_ && s.inner == inner_) return;
  cudnn::SetTensor4d(&s.tensor, static_cast<int>(outer_), static_cast<int>(channels_),
                     static_cast<int>(inner_), 1);
  s.outer = outer_;
  s.channels = channels_;
  s.inner = inner_;
}

void CudnnSoftmaxLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!uses_cudnn()) {
    SoftmaxLayer::Forward_gpu(bottom, top);
    return;
  }
  Describe();
  State& s = *cudnn_;
  const float* x = bottom[0]->gpu_data();
  if (top[0] == bottom[0]) {
    // cuDNN does not promise that y may alias x; run from a copy.
    s.scratch.ReshapeLike(*bottom[0]);
    math::gpu_copy(bottom[0]->count(), x, s.scratch.mutable_gpu_data());
    x = s.scratch.gpu_data();
  }
  CUDNN_CHECK(cudnnSoftmaxForward(cudnn::Handle(), CUDNN_SOFTMAX_ACCURATE,
                                  CUDNN_SOFTMAX_MODE_CHANNEL, &cudnn::kOne, s.tensor.get(), x,
                                  &cudnn::kZero, s.tensor.get(),
                                  top[0]->mutable_gpu_data()));
}

void CudnnSoftmaxLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  if (!uses_cudnn()) {
    SoftmaxLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  Describe();
  State& s = *cudnn_;
  const float* dy = top[0]->gpu_diff();
  if (top[0] == bottom[0]) {
    // cuDNN does not promise that dx may alias dy here; keep dy apart.
    s.scratch.ReshapeLike(*top[0]);
    math::gpu_copy(top[0]->count(), dy, s.scratch.mutable_gpu_data());
    dy = s.scratch.gpu_data();
  }
  CUDNN_CHECK(cudnnSoftmaxBackward(cudnn::Handle(), CUDNN_SOFTMAX_ACCURATE,
                                   CUDNN_SOFTMAX_MODE_CHANNEL, &cudnn::kOne, s.tensor.get(),
                                   top[0]->gpu_data(), s.tensor.get(), dy, &cudnn::kZero,
                                   s.tensor.get(), bottom[0]->mutable_gpu_diff()));
}

}  // namespace caffe

#endif  // USE_CUDNN
