// BatchNorm on the device. One block per channel: it reduces the channel's statistics
// (in double, fixed tree order, so results do not depend on timing), then normalizes
// the channel's elements. Every element is read for the reductions before any is
// written, and only by its own block, so top may alias bottom (and dx may alias dy) as
// on the host. The running statistics are folded in with exactly the host's
// arithmetic: the default host build (-march=native, FMA) compiles math::axpby's
// alpha * x + beta * y as fma(alpha, x, beta * y) and the normalizer's f * maf + 1 as
// fma(f, maf, 1), so the kernel spells out the same roundings and the statistics blobs
// end bit-identical to a CPU run's (a host build without FMA would differ by an ulp).
#include <cmath>

#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// Sum of every thread's value, returned to all threads of the block. `scratch` holds
// kCudaThreads doubles; blockDim.x must be kCudaThreads (a power of two).
__device__ double BlockSum(double value, double* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  const double total = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return total;
}

struct BatchNormShape {
  int64_t num, channels, spatial;
  __device__ int64_t Index(int64_t c, int64_t j) const {  // j-th element of channel c
    return ((j / spatial) * channels + c) * spatial + j % spatial;
  }
};

// blobs_[0..2]: read with use_global_stats, updated otherwise.
struct RunningStats {
  float* mean_sum;
  float* variance_sum;
  float* normalizer;
};

// Block c: the statistics of channel c (batch statistics, or the running estimates when
// use_global), then y = (x - mean) * inv_std. With batch statistics x_hat gets a copy of
// y and the running statistics are updated.
__global__ void BatchNormForwardKernel(BatchNormShape shape, const float* x, bool use_global,
                                       RunningStats running, float maf, float correction,
                                       float eps, float* mean_out, float* variance_out,
                                       float* inv_std_out, float* y, float* x_hat) {
  __shared__ double scratch[kCudaThreads];
  __shared__ float channel_mean, channel_inv_std;
  const int64_t c = blockIdx.x;
  const int64_t per_channel = shape.num * shape.spatial;
  float mean, variance;
  if (use_global) {
    // A normalizer of 0 means no statistics were gathered yet: use zeros.
    const float normalizer = running.normalizer[0];
    const float factor = normalizer == 0.f ? 0.f : 1.f / normalizer;
    mean = __fmul_rn(factor, running.mean_sum[c]);
    variance = __fmul_rn(factor, running.variance_sum[c]);
  } else {
    // Two passes (mean, then squared deviations), as on the host.
    const double m = static_cast<double>(per_channel);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) sum += x[shape.Index(c, j)];
    const double mu = BlockSum(sum, scratch) / m;
    double squares = 0;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
      const double d = x[shape.Index(c, j)] - mu;
      squares += __dmul_rn(d, d);  // unfused, like the host's loop
    }
    const double var = BlockSum(squares, scratch) / m;
    mean = static_cast<float>(mu);
    variance = static_cast<float>(var);
  }
  if (threadIdx.x == 0) {
    const float inv_std = 1.f / sqrtf(__fadd_rn(variance, eps));
    mean_out[c] = mean;
    variance_out[c] = variance;
    inv_std_out[c] = inv_std;
    channel_mean = mean;
    channel_inv_std = inv_std;
    if (!use_global) {
      // math::axpby(alpha, x, maf, y) on the host: fma(alpha, x, maf * y).
      running.mean_sum[c] = fmaf(1.f, mean, __fmul_rn(maf, running.mean_sum[c]));
      running.variance_sum[c] =
          fmaf(correction, variance, __fmul_rn(maf, running.variance_sum[c]));
      if (c == 0) running.normalizer[0] = fmaf(running.normalizer[0], maf, 1.f);
    }
  }
  __syncthreads();
  const float m_c = channel_mean, s_c = channel_inv_std;
  for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
    const int64_t i = shape.Index(c, j);
    const float value = __fmul_rn(x[i] - m_c, s_c);
    y[i] = value;
    if (x_hat) x_hat[i] = value;
  }
}

// Block c: dx = inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)) over channel c, or
// dx = dy * inv_std with the (constant) global statistics.
__global__ void BatchNormBackwardKernel(BatchNormShape shape, const float* dy,
                                        const float* x_hat, const float* inv_std,
                                        bool use_global, float* dx) {
  __shared__ double scratch[kCudaThreads];
  const int64_t c = blockIdx.x;
  const int64_t per_channel = shape.num * shape.spatial;
  float mean_dy = 0.f, mean_dy_xhat = 0.f;
  if (!use_global) {
    const double m = static_cast<double>(per_channel);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
      const int64_t i = shape.Index(c, j);
      sum_dy += dy[i];
      sum_dy_xhat += __fmul_rn(dy[i], x_hat[i]);  // a float product, as on the host
    }
    mean_dy = static_cast<float>(BlockSum(sum_dy, scratch) / m);
    mean_dy_xhat = static_cast<float>(BlockSum(sum_dy_xhat, scratch) / m);
  }
  const float s_c = inv_std[c];
  for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
    const int64_t i = shape.Index(c, j);
    const float centered =
        use_global ? dy[i] : (dy[i] - mean_dy) - __fmul_rn(x_hat[i], mean_dy_xhat);
    dx[i] = __fmul_rn(centered, s_c);
  }
}

}  // namespace

void BatchNormLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  x_norm_kept_ = false;  // x_hat is on the device: nothing a host layer may borrow
  x_norm_kept_on_device_ = false;
  if (channels_ == 0) {
    // No block to launch, but a pass with batch statistics still counts in the
    // normalizer, as on the host (the kernel's block 0 does this otherwise).
    if (!use_global_stats_) {
      float* normalizer = blobs_[2]->mutable_cpu_data();
      normalizer[0] = std::fma(normalizer[0], moving_average_fraction_, 1.f);
    }
    return;
  }
  const BatchNormShape shape{num_, channels_, spatial_};
  const int64_t m = num_ * spatial_;
  const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.f;
  // With global statistics the blobs are only read: keep their host copies valid.
  const RunningStats running =
      use_global_stats_
          ? RunningStats{const_cast<float*>(blobs_[0]->gpu_data()),
                         const_cast<float*>(blobs_[1]->gpu_data()),
                         const_cast<float*>(blobs_[2]->gpu_data())}
          : RunningStats{blobs_[0]->mutable_gpu_data(), blobs_[1]->mutable_gpu_data(),
                         blobs_[2]->mutable_gpu_data()};
  const float* x = bottom[0]->gpu_data();
  float* y = top[0]->mutable_gpu_data();
  float* x_hat = use_global_stats_ ? nullptr : x_norm_.mutable_gpu_data();
  BatchNormForwardKernel<<<static_cast<unsigned>(channels_), kCudaThreads>>>(
      shape, x, use_global_stats_, running, moving_average_fraction_, correction, eps_,
      mean_.mutable_gpu_data(), variance_.mutable_gpu_data(), inv_std_.mutable_gpu_data(), y,
      x_hat);
  CUDA_CHECK(cudaPeekAtLastError());
  x_norm_kept_on_device_ = x_hat != nullptr;
}

Layer::KeptDeviceTop BatchNormLayer::KeptTopValuesGpu() const {
  KeptDeviceTop kept;
  if (x_norm_kept_on_device_) {
    kept.values = x_norm_.gpu_data();
    kept.channels = channels_;
  }
  return kept;
}

void BatchNormLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (!propagate_down[0] || channels_ == 0) return;
  const BatchNormShape shape{num_, channels_, spatial_};
  const float* dy = top[0]->gpu_diff();
  // x_hat is only kept (and only read) with batch statistics.
  const float* x_hat = use_global_stats_ ? nullptr : x_norm_.gpu_data();
  BatchNormBackwardKernel<<<static_cast<unsigned>(channels_), kCudaThreads>>>(
      shape, dy, x_hat, inv_std_.gpu_data(), use_global_stats_, bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
