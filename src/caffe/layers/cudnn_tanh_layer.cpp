#ifdef USE_CUDNN

#include "caffe/layers/cudnn_tanh_layer.hpp"

#include <climits>

#include "caffe/util/cudnn.hpp"

namespace caffe {

CudnnTanHLayer::CudnnTanHLayer(const LayerParameter& param)
    : TanHLayer(param),
      activation_(std::make_unique<cudnn::Activation>(CUDNN_ACTIVATION_TANH)) {}

CudnnTanHLayer::~CudnnTanHLayer() = default;

bool CudnnTanHLayer::uses_cudnn(const Blob& bottom) const {
  return bottom.count() <= INT_MAX;
}

void CudnnTanHLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!uses_cudnn(*bottom[0])) {
    TanHLayer::Forward_gpu(bottom, top);
    return;
  }
  activation_->Forward(bottom[0]->count(), bottom[0]->gpu_data(), top[0]->mutable_gpu_data());
}

void CudnnTanHLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!uses_cudnn(*bottom[0])) {
    TanHLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  // In place, bottom data already holds y; see cudnn::Activation for why that is exact.
  activation_->Backward(bottom[0]->count(), top[0]->gpu_data(), top[0]->gpu_diff(),
                        bottom[0]->gpu_data(), bottom[0]->mutable_gpu_diff());
}

}  // namespace caffe

#endif  // USE_CUDNN
