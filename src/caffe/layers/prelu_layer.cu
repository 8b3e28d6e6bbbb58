// PReLU on the device. The slope gradient is a per-channel sum over batch and spatial
// positions; it is reduced deterministically (fixed-order tree in each block, then a
// fixed-order sum of the blocks' partials), so repeated runs give identical weights.
#include <algorithm>

#include "caffe/layers/neuron_layer.cuh"
#include "caffe/layers/prelu_layer.hpp"

namespace caffe {

namespace {

// Element i of an N x C x inner blob lies in channel (i / inner) % C.
struct PReLUForward {
  const float* x;
  float* y;
  const float* slope;
  int64_t channels, inner;
  bool channel_shared;
  __device__ void operator()(int64_t i) const {
    const float a = slope[channel_shared ? 0 : (i / inner) % channels];
    y[i] = x[i] > 0 ? x[i] : a * x[i];
  }
};

struct PReLUBackward {
  const float* x;
  const float* dy;
  float* dx;
  const float* slope;
  int64_t channels, inner;
  bool channel_shared;
  __device__ void operator()(int64_t i) const {
    const float a = slope[channel_shared ? 0 : (i / inner) % channels];
    dx[i] = x[i] > 0 ? dy[i] : a * dy[i];
  }
};

// Block (c, s) sums dy * x over the x <= 0 elements of channel c that fall in its
// share s of the channel's num * inner elements, in double like the CPU path, and
// writes partials[c * splits + s].
__global__ void SlopeDiffPartialsKernel(const float* x, const float* dy, int64_t num,
                                        int64_t channels, int64_t inner, float* partials) {
  __shared__ double sums[kCudaThreads];
  const int64_t c = blockIdx.x;
  const int64_t splits = gridDim.y;
  const int64_t per_channel = num * inner;
  double sum = 0;
  for (int64_t j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; j < per_channel;
       j += splits * blockDim.x) {
    const int64_t i = ((j / inner) * channels + c) * inner + j % inner;
    if (x[i] <= 0) sum += static_cast<double>(dy[i]) * x[i];
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[c * splits + blockIdx.y] = static_cast<float>(sums[0]);
}

// Adds each channel's partials (in split order) to the slope diff, which accumulates
// like every weight diff. A shared slope takes every channel's sum in channel order,
// as on the CPU path, so it runs as a single element.
struct AccumulateSlopeDiff {
  const float* partials;
  float* slope_diff;
  int64_t channels, splits;
  bool channel_shared;
  __device__ float ChannelSum(int64_t c) const {
    double sum = 0;
    for (int64_t s = 0; s < splits; ++s) sum += partials[c * splits + s];
    return static_cast<float>(sum);
  }
  __device__ void operator()(int64_t i) const {
    if (channel_shared) {
      for (int64_t c = 0; c < channels; ++c) slope_diff[0] += ChannelSum(c);
    } else {
      slope_diff[i] += ChannelSum(i);
    }
  }
};

// Splits per channel: about 8 elements per thread, and no more than ~4096 blocks in all
// (enough to fill the device; each extra split only adds partials to sum).
int64_t SlopeDiffSplits(int64_t per_channel, int64_t channels) {
  const int64_t wanted = (per_channel + 8 * kCudaThreads - 1) / (8 * kCudaThreads);
  const int64_t cap = std::max<int64_t>(1, 4096 / std::max<int64_t>(channels, 1));
  return std::max<int64_t>(1, std::min<int64_t>({wanted, cap, 65535}));
}

}  // namespace

void PReLULayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->gpu_data();
  if (bottom[0] == top[0]) {
    CopyDataOnGpu(*bottom[0], &bottom_copy_);
    x = bottom_copy_.gpu_data();
  }
  LaunchElementwise(bottom[0]->count(),
                    PReLUForward{x, top[0]->mutable_gpu_data(), blobs_[0]->gpu_data(),
                                 bottom[0]->shape(1), bottom[0]->count(2), channel_shared_});
}

void PReLULayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const float* x = bottom[0] == top[0] ? bottom_copy_.gpu_data() : bottom[0]->gpu_data();
  const float* dy = top[0]->gpu_diff();
  const int64_t num = bottom[0]->shape(0);
  const int64_t channels = bottom[0]->shape(1);
  const int64_t inner = bottom[0]->count(2);
  // The slope gradient reads dy, so it is queued before dx overwrites dy in place.
  if (param_propagate_down(0) && bottom[0]->count() > 0) {
    const int64_t splits = SlopeDiffSplits(num * inner, channels);
    slope_diff_partials_.Reshape({channels * splits});
    float* partials = slope_diff_partials_.mutable_gpu_data();
    SlopeDiffPartialsKernel<<<dim3(static_cast<unsigned>(channels), static_cast<unsigned>(splits)),
                              kCudaThreads>>>(x, dy, num, channels, inner, partials);
    CUDA_CHECK(cudaPeekAtLastError());
    LaunchElementwise(channel_shared_ ? 1 : channels,
                      AccumulateSlopeDiff{partials, blobs_[0]->mutable_gpu_diff(), channels,
                                          splits, channel_shared_});
  }
  if (propagate_down[0]) {
    LaunchElementwise(bottom[0]->count(),
                      PReLUBackward{x, dy, bottom[0]->mutable_gpu_diff(), blobs_[0]->gpu_data(),
                                    channels, inner, channel_shared_});
  }
}

}  // namespace caffe
