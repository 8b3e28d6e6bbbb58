// InnerProduct on the device: the GEMMs of inner_product_layer.cpp with cuBLAS.
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void InnerProductLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->gpu_data();
  const float* w = blobs_[0]->gpu_data();
  float* y = top[0]->mutable_gpu_data();
  math::gpu_gemm(math::NoTrans, transpose_ ? math::NoTrans : math::Trans, M_, N_, K_, 1.f, x,
                 w, 0.f, y);
  if (bias_term_) {
    math::gpu_gemm(math::NoTrans, math::NoTrans, M_, N_, 1, 1.f, bias_multiplier_.gpu_data(),
                   blobs_[1]->gpu_data(), 1.f, y);
  }
}

void InnerProductLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  const float* dy = top[0]->gpu_diff();
  const float* x = bottom[0]->gpu_data();
  // Weight and bias gradients accumulate (beta = 1), as on the host.
  if (param_propagate_down(0)) {
    if (transpose_) {
      math::gpu_gemm(math::Trans, math::NoTrans, K_, N_, M_, 1.f, x, dy, 1.f,
                     blobs_[0]->mutable_gpu_diff());
    } else {
      math::gpu_gemm(math::Trans, math::NoTrans, N_, K_, M_, 1.f, dy, x, 1.f,
                     blobs_[0]->mutable_gpu_diff());
    }
  }
  if (bias_term_ && param_propagate_down(1)) {
    math::gpu_gemv(math::Trans, M_, N_, 1.f, dy, bias_multiplier_.gpu_data(), 1.f,
                   blobs_[1]->mutable_gpu_diff());
  }
  if (propagate_down[0]) {
    math::gpu_gemm(math::NoTrans, transpose_ ? math::Trans : math::NoTrans, M_, K_, N_, 1.f, dy,
                   blobs_[0]->gpu_data(), 0.f, bottom[0]->mutable_gpu_diff());
  }
}

}  // namespace caffe
