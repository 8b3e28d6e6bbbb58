#ifdef USE_CUDNN

#include "caffe/layers/cudnn_relu_layer.hpp"

#include <climits>

#include "caffe/util/cudnn.hpp"

namespace caffe {

CudnnReLULayer::CudnnReLULayer(const LayerParameter& param)
    : ReLULayer(param),
      activation_(std::make_unique<cudnn::Activation>(CUDNN_ACTIVATION_RELU)) {}

CudnnReLULayer::~CudnnReLULayer() = default;

bool CudnnReLULayer::uses_cudnn(const Blob& bottom) const {
  return layer_param_.relu_param().negative_slope() == 0.f && bottom.count() <= INT_MAX;
}

void CudnnReLULayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!uses_cudnn(*bottom[0])) {
    ReLULayer::Forward_gpu(bottom, top);
    return;
  }
  activation_->Forward(bottom[0]->count(), bottom[0]->gpu_data(), top[0]->mutable_gpu_data());
}

void CudnnReLULayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!uses_cudnn(*bottom[0])) {
    ReLULayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  // In place, bottom data already holds y; see cudnn::Activation for why that is exact.
  activation_->Backward(bottom[0]->count(), top[0]->gpu_data(), top[0]->gpu_diff(),
                        bottom[0]->gpu_data(), bottom[0]->mutable_gpu_diff());
}

}  // namespace caffe

#endif  // USE_CUDNN
