#ifdef USE_CUDNN

#include "caffe/layers/cudnn_activation_layer.hpp"

#include <climits>

#include "caffe/util/cudnn.hpp"

namespace caffe {

namespace {

// What each reference layer computes, as a cuDNN activation mode.
cudnnActivationMode_t ModeFor(const ReLULayer*) { return CUDNN_ACTIVATION_RELU; }
cudnnActivationMode_t ModeFor(const SigmoidLayer*) { return CUDNN_ACTIVATION_SIGMOID; }
cudnnActivationMode_t ModeFor(const TanHLayer*) { return CUDNN_ACTIVATION_TANH; }

// Whether cuDNN has a mode for these parameters: leaky ReLU has none.
bool CudnnComputes(const ReLULayer& layer) {
  return layer.layer_param().relu_param().negative_slope() == 0.f;
}
bool CudnnComputes(const SigmoidLayer&) { return true; }
bool CudnnComputes(const TanHLayer&) { return true; }

// Whether backward needs the forward output. ReLU's gradient depends only on the sign,
// and relu(x) > 0 exactly where x > 0, so x can stand in for y: the reference ReLU reads
// only bottom data, and a later in-place layer that rewrites this layer's top (BatchNorm,
// Scale after a ReLU with its own top) must not change the gradient. Sigmoid and tanh
// read y, as their reference layers do.
bool BackwardReadsTop(const ReLULayer&) { return false; }
bool BackwardReadsTop(const SigmoidLayer&) { return true; }
bool BackwardReadsTop(const TanHLayer&) { return true; }

}  // namespace

template <typename Reference>
CudnnActivationLayer<Reference>::CudnnActivationLayer(const LayerParameter& param)
    : Reference(param),
      activation_(std::make_unique<cudnn::Activation>(ModeFor(static_cast<Reference*>(nullptr)))) {}

template <typename Reference>
CudnnActivationLayer<Reference>::~CudnnActivationLayer() = default;

template <typename Reference>
bool CudnnActivationLayer<Reference>::uses_cudnn(const Blob& bottom) const {
  return CudnnComputes(static_cast<const Reference&>(*this)) && bottom.count() <= INT_MAX;
}

template <typename Reference>
void CudnnActivationLayer<Reference>::Forward_gpu(const vector<Blob*>& bottom,
                                                  const vector<Blob*>& top) {
  if (!uses_cudnn(*bottom[0])) {
    Reference::Forward_gpu(bottom, top);
    return;
  }
  activation_->Forward(bottom[0]->count(), bottom[0]->gpu_data(), top[0]->mutable_gpu_data());
}

template <typename Reference>
void CudnnActivationLayer<Reference>::Backward_gpu(const vector<Blob*>& top,
                                                   const vector<bool>& propagate_down,
                                                   const vector<Blob*>& bottom) {
  if (!uses_cudnn(*bottom[0])) {
    Reference::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  // In place, bottom data already holds y; see cudnn::Activation for why that is exact.
  const float* x = bottom[0]->gpu_data();
  const float* y =
      BackwardReadsTop(static_cast<const Reference&>(*this)) ? top[0]->gpu_data() : x;
  activation_->Backward(bottom[0]->count(), y, top[0]->gpu_diff(), x,
                        bottom[0]->mutable_gpu_diff());
}

template class CudnnActivationLayer<ReLULayer>;
template class CudnnActivationLayer<SigmoidLayer>;
template class CudnnActivationLayer<TanHLayer>;

}  // namespace caffe

#endif  // USE_CUDNN
