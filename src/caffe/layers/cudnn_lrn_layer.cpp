#ifdef USE_CUDNN

#include "caffe/layers/cudnn_lrn_layer.hpp"

#include "caffe/util/cudnn.hpp"

namespace caffe {

struct CudnnLRNLayer::State {
  cudnn::TensorDescriptor tensor;  // bottom and top have one shape
  cudnn::LRNDescriptor lrn;
  bool lrn_described = false;
  vector<int64_t> described_shape;
};

CudnnLRNLayer::CudnnLRNLayer(const LayerParameter& param)
    : LRNLayer(param), cudnn_(std::make_unique<State>()) {}

CudnnLRNLayer::~CudnnLRNLayer() = default;

bool CudnnLRNLayer::uses_cudnn() const {
  return across_channels_ && size_ >= CUDNN_LRN_MIN_N && size_ <= CUDNN_LRN_MAX_N &&
         k_ >= CUDNN_LRN_MIN_K && beta_ >= CUDNN_LRN_MIN_BETA &&
         cudnn::FitsInt(num_, channels_, height_, width_);
}

void CudnnLRNLayer::Describe(const Blob& bottom) {
  State& s = *cudnn_;
  if (!s.lrn_described) {
    CUDNN_CHECK(cudnnSetLRNDescriptor(s.lrn.get(), static_cast<unsigned>(size_), alpha_, beta_,
                                      k_));
    s.lrn_described = true;
  }
  if (s.described_shape == bottom.shape()) return;
  cudnn::SetTensor4d(&s.tensor, static_cast<int>(num_), static_cast<int>(channels_),
                     static_cast<int>(height_), static_cast<int>(width_));
  s.described_shape = bottom.shape();
}

void CudnnLRNLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!uses_cudnn()) {
    LRNLayer::Forward_gpu(bottom, top);
    return;
  }
  Describe(*bottom[0]);
  State& s = *cudnn_;
  CUDNN_CHECK(cudnnLRNCrossChannelForward(cudnn::Handle(), s.lrn.get(),
                                          CUDNN_LRN_CROSS_CHANNEL_DIM1, &cudnn::kOne,
                                          s.tensor.get(), bottom[0]->gpu_data(), &cudnn::kZero,
                                          s.tensor.get(), top[0]->mutable_gpu_data()));
}

void CudnnLRNLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                 const vector<Blob*>& bottom) {
  if (!uses_cudnn()) {
    LRNLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  Describe(*bottom[0]);
  State& s = *cudnn_;
  CUDNN_CHECK(cudnnLRNCrossChannelBackward(
      cudnn::Handle(), s.lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &cudnn::kOne, s.tensor.get(),
      top[0]->gpu_data(), s.tensor.get(), top[0]->gpu_diff(), s.tensor.get(),
      bottom[0]->gpu_data(), &cudnn::kZero, s.tensor.get(), bottom[0]->mutable_gpu_diff()));
}

}  // namespace caffe

#endif  // USE_CUDNN
