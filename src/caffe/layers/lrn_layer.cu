// LRN on the device, both regions. The window sums use the host's running-sum scheme
// (lrn_layer.cpp's SlidingRowSum) along each line, one thread per line, so they add
// and subtract the same terms in the same order as the host.
#include <cmath>

#include "caffe/layers/lrn_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// Lines of `length` elements spaced `inner` apart; line l starts at
// (l / inner) * length * inner + l % inner. out at position i of a line is the sum of
// `in` over positions [i - half, i + half] clipped to the line.
__global__ void SlidingWindowSumKernel(int64_t lines, const float* in, int64_t length,
                                       int64_t inner, int half, float* out) {
  CUDA_GRID_STRIDE_LOOP(line, lines) {
    const int64_t start = (line / inner) * length * inner + line % inner;
    const float* src = in + start;
    float* dst = out + start;
    float sum = 0.f;
    const int64_t first_window_end = half < length - 1 ? half : length - 1;
    for (int64_t j = 0; j <= first_window_end; ++j) sum += src[j * inner];
    dst[0] = sum;
    for (int64_t i = 1; i < length; ++i) {
      const float entering = i + half < length ? src[(i + half) * inner] : 0.f;
      const float leaving = i - half - 1 >= 0 ? src[(i - half - 1) * inner] : 0.f;
      sum = (sum + entering) - leaving;
      dst[i * inner] = sum;
    }
  }
}

__global__ void SquareKernel(int64_t n, const float* x, float* squares) {
  CUDA_GRID_STRIDE_LOOP(i, n) { squares[i] = x[i] * x[i]; }
}

// scale = k + alpha/n * window sum (in place), y = x * scale^-beta.
__global__ void LrnOutputKernel(int64_t n, const float* x, float k, float alpha_over_n,
                                float beta, float* scale, float* y) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const float s = k + alpha_over_n * scale[i];
    scale[i] = s;
    y[i] = x[i] * powf(s, -beta);
  }
}

__global__ void LrnRatioKernel(int64_t n, const float* dy, const float* y, const float* scale,
                               float* ratio) {
  CUDA_GRID_STRIDE_LOOP(i, n) { ratio[i] = dy[i] * y[i] / scale[i]; }
}

// dx holds the window sum of the ratios on entry.
__global__ void LrnInputDiffKernel(int64_t n, const float* dy, const float* x,
                                   const float* scale, float beta, float factor, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    dx[i] = dy[i] * powf(scale[i], -beta) - factor * x[i] * dx[i];
  }
}

void LaunchSlidingWindowSum(int64_t outer, const float* in, int64_t length, int64_t inner,
                            int half, float* out) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || length <= 0) return;
  SlidingWindowSumKernel<<<CudaGridBlocks(lines), kCudaThreads>>>(lines, in, length, inner,
                                                                  half, out);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace

void LRNLayer::WindowSumGpu(const float* in, float* out) {
  const int64_t plane = height_ * width_;
  if (across_channels_) {
    LaunchSlidingWindowSum(num_, in, channels_, plane, half_, out);
    return;
  }
  // Separable square window: along every row, then down every column of every plane.
  gpu_partial_.Reshape({num_, channels_, height_, width_});
  float* partial = gpu_partial_.mutable_gpu_data();
  LaunchSlidingWindowSum(num_ * channels_ * height_, in, width_, 1, half_, partial);
  LaunchSlidingWindowSum(num_ * channels_, partial, height_, width_, half_, out);
}

void LRNLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  if (count == 0) return;
  const float* x = bottom[0]->gpu_data();
  float* squares = scratch_.mutable_gpu_data();
  SquareKernel<<<CudaGridBlocks(count), kCudaThreads>>>(count, x, squares);
  CUDA_CHECK(cudaPeekAtLastError());
  float* scale = scale_.mutable_gpu_data();
  WindowSumGpu(squares, scale);
  LrnOutputKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, x, k_, alpha_ / window_count_, beta_, scale, top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void LRNLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  if (count == 0) return;
  const float* scale = scale_.gpu_data();
  float* ratio = scratch_.mutable_gpu_data();
  LrnRatioKernel<<<CudaGridBlocks(count), kCudaThreads>>>(count, top[0]->gpu_diff(),
                                                          top[0]->gpu_data(), scale, ratio);
  CUDA_CHECK(cudaPeekAtLastError());
  float* dx = bottom[0]->mutable_gpu_diff();
  WindowSumGpu(ratio, dx);
  LrnInputDiffKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, top[0]->gpu_diff(), bottom[0]->gpu_data(), scale, beta_,
      2.f * alpha_ * beta_ / window_count_, dx);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
