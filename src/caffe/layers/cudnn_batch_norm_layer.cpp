#ifdef USE_CUDNN

#include "caffe/layers/cudnn_batch_norm_layer.hpp"

#include "caffe/util/cudnn.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

struct CudnnBatchNormLayer::State {
  cudnn::TensorDescriptor data;   // num x channels x spatial x 1, bottom and top
  cudnn::TensorDescriptor stats;  // 1 x channels x 1 x 1, every per-channel buffer
  vector<int64_t> described_shape;
  int64_t described_channels = -1;
  // Per channel (C):
  Blob ones, zeros;                 // cuDNN's scale and bias: the identity affine step
  Blob batch_mean, batch_variance;  // TRAIN: this batch's mean and unbiased variance
  Blob saved_mean, saved_inv_std;   // TRAIN: what backward reads
  Blob global_mean, global_variance;  // use_global_stats: blob / normalizer
  Blob scale_diff, bias_diff;       // cuDNN writes them; BatchNorm has no such weights
  // Like the bottom: the input kept for backward when the layer runs in place. (The
  // copy of the top diff that an in-place backward needs lives only during that pass,
  // so it is taken in the thread's shared cuDNN workspace, not kept per layer: on
  // ResNet-50 at batch 64 one such buffer per BatchNorm came to about 2.7 GB.)
  Blob input;
  bool input_kept = false;  // the last Forward was a training pass in place on cuDNN
};

CudnnBatchNormLayer::CudnnBatchNormLayer(const LayerParameter& param)
    : BatchNormLayer(param), cudnn_(std::make_unique<State>()) {}

CudnnBatchNormLayer::~CudnnBatchNormLayer() = default;

bool CudnnBatchNormLayer::uses_cudnn() const {
  if (!use_global_stats_ && num_ * spatial_ <= 1) return false;
  return static_cast<double>(eps_) >= CUDNN_BN_MIN_EPSILON &&
         cudnn::FitsInt(num_, channels_, spatial_, 1);
}

void CudnnBatchNormLayer::Describe(const Blob& bottom) {
  State& s = *cudnn_;
  if (s.described_channels != channels_) {
    cudnn::SetTensor4d(&s.stats, 1, static_cast<int>(channels_), 1, 1);
    for (Blob* blob : {&s.ones, &s.zeros, &s.batch_mean, &s.batch_variance, &s.saved_mean,
                       &s.saved_inv_std, &s.global_mean, &s.global_variance, &s.scale_diff,
                       &s.bias_diff}) {
      blob->Reshape({channels_});
    }
    math::gpu_set(channels_, 1.f, s.ones.mutable_gpu_data());
    math::gpu_set(channels_, 0.f, s.zeros.mutable_gpu_data());
    // cuDNN computes running = (1 - factor) * running + factor * batch; with factor 1
    // the old value still gets multiplied by 0, which must not be a NaN from fresh memory.
    math::gpu_set(channels_, 0.f, s.batch_mean.mutable_gpu_data());
    math::gpu_set(channels_, 0.f, s.batch_variance.mutable_gpu_data());
    s.described_channels = channels_;
  }
  if (s.described_shape == bottom.shape()) return;
  cudnn::SetTensor4d(&s.data, static_cast<int>(num_), static_cast<int>(channels_),
                     static_cast<int>(spatial_), 1);
  s.described_shape = bottom.shape();
}

void CudnnBatchNormLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  cudnn_->input_kept = false;
  if (!uses_cudnn()) {
    BatchNormLayer::Forward_gpu(bottom, top);
    return;
  }
  x_norm_kept_ = x_norm_kept_on_device_ = false;  // the reference path's x_norm_ is stale
  Describe(*bottom[0]);
  State& s = *cudnn_;
  cudnnHandle_t handle = cudnn::Handle();
  const float* x = bottom[0]->gpu_data();
  if (top[0] == bottom[0]) {
    s.input.ReshapeLike(*bottom[0]);
    math::gpu_copy(bottom[0]->count(), x, s.input.mutable_gpu_data());
    x = s.input.gpu_data();
  }
  float* y = top[0]->mutable_gpu_data();
  if (use_global_stats_) {
    // One float read back: the normalizer decides the factor, as on the CPU.
    const float normalizer = blobs_[2]->cpu_data()[0];
    const float factor = normalizer == 0.f ? 0.f : 1.f / normalizer;
    math::gpu_copy(channels_, blobs_[0]->gpu_data(), s.global_mean.mutable_gpu_data());
    math::gpu_scal(channels_, factor, s.global_mean.mutable_gpu_data());
    math::gpu_copy(channels_, blobs_[1]->gpu_data(), s.global_variance.mutable_gpu_data());
    math::gpu_scal(channels_, factor, s.global_variance.mutable_gpu_data());
    CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
        handle, CUDNN_BATCHNORM_SPATIAL, &cudnn::kOne, &cudnn::kZero, s.data.get(), x,
        s.data.get(), y, s.stats.get(), s.ones.gpu_data(), s.zeros.gpu_data(),
        s.global_mean.gpu_data(), s.global_variance.gpu_data(), eps_));
    return;
  }
  CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      handle, CUDNN_BATCHNORM_SPATIAL, &cudnn::kOne, &cudnn::kZero, s.data.get(), x,
      s.data.get(), y, s.stats.get(), s.ones.gpu_data(), s.zeros.gpu_data(),
      /*exponentialAverageFactor=*/1.0, s.batch_mean.mutable_gpu_data(),
      s.batch_variance.mutable_gpu_data(), eps_, s.saved_mean.mutable_gpu_data(),
      s.saved_inv_std.mutable_gpu_data()));
  s.input_kept = top[0] == bottom[0];
  // Caffe's update of its running sums (BatchNormLayer::UpdateRunningStatistics).
  const float maf = moving_average_fraction_;
  math::gpu_axpby(1, 1.f, s.ones.gpu_data(), maf, blobs_[2]->mutable_gpu_data());
  math::gpu_axpby(channels_, 1.f, s.batch_mean.gpu_data(), maf, blobs_[0]->mutable_gpu_data());
  math::gpu_axpby(channels_, 1.f, s.batch_variance.gpu_data(), maf,
                  blobs_[1]->mutable_gpu_data());
}

Layer::KeptDeviceTop CudnnBatchNormLayer::KeptTopValuesGpu() const {
  if (!cudnn_->input_kept) return BatchNormLayer::KeptTopValuesGpu();
  KeptDeviceTop kept;
  kept.values = cudnn_->input.gpu_data();
  kept.mean = cudnn_->saved_mean.gpu_data();
  kept.inv_std = cudnn_->saved_inv_std.gpu_data();
  kept.channels = channels_;
  return kept;
}

void CudnnBatchNormLayer::Backward_gpu(const vector<Blob*>& top,
                                       const vector<bool>& propagate_down,
                                       const vector<Blob*>& bottom) {
  if (!uses_cudnn()) {
    BatchNormLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  Describe(*bottom[0]);
  State& s = *cudnn_;
  cudnnHandle_t handle = cudnn::Handle();
  const float* dy = top[0]->gpu_diff();
  if (top[0] == bottom[0]) {
    float* dy_copy = static_cast<float*>(cudnn::Workspace(top[0]->count() * sizeof(float)));
    math::gpu_copy(top[0]->count(), dy, dy_copy);
    dy = dy_copy;
  }
  float* dx = bottom[0]->mutable_gpu_diff();
  if (use_global_stats_) {
    // The statistics are constants: dx = dy / sqrt(var + eps), the inference transform
    // of dy with mean 0 (zeros doubles as that mean).
    CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
        handle, CUDNN_BATCHNORM_SPATIAL, &cudnn::kOne, &cudnn::kZero, s.data.get(), dy,
        s.data.get(), dx, s.stats.get(), s.ones.gpu_data(), s.zeros.gpu_data(),
        s.zeros.gpu_data(), s.global_variance.gpu_data(), eps_));
    return;
  }
  const float* x = top[0] == bottom[0] ? s.input.gpu_data() : bottom[0]->gpu_data();
  CUDNN_CHECK(cudnnBatchNormalizationBackward(
      handle, CUDNN_BATCHNORM_SPATIAL, &cudnn::kOne, &cudnn::kZero, &cudnn::kOne, &cudnn::kZero,
      s.data.get(), x, s.data.get(), dy, s.data.get(), dx, s.stats.get(), s.ones.gpu_data(),
      s.scale_diff.mutable_gpu_data(), s.bias_diff.mutable_gpu_data(), eps_,
      s.saved_mean.gpu_data(), s.saved_inv_std.gpu_data()));
}

}  // namespace caffe

#endif  // USE_CUDNN
