// Softmax over any axis on the device: one thread per (outer, inner) position walks its
// channels, in the host's order (max, exponentials, their sum, division), so in-place
// use works as on the host. Reads are coalesced across threads when inner > 1; for
// inner == 1 (N x C classification scores) the cuDNN engine is the fast path.
#include "caffe/layers/softmax_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

__global__ void SoftmaxForwardKernel(int64_t positions, const float* x, int64_t channels,
                                     int64_t inner, float* y) {
  CUDA_GRID_STRIDE_LOOP(position, positions) {
    const int64_t offset = (position / inner) * channels * inner + position % inner;
    const float* in = x + offset;
    float* out = y + offset;
    float max_value = in[0];
    for (int64_t c = 1; c < channels; ++c) {
      const float v = in[c * inner];
      max_value = max_value < v ? v : max_value;  // std::max's rule, NaNs included
    }
    float sum = 0.f;
    for (int64_t c = 0; c < channels; ++c) {
      const float e = expf(in[c * inner] - max_value);
      out[c * inner] = e;
      sum += e;
    }
    for (int64_t c = 0; c < channels; ++c) out[c * inner] /= sum;
  }
}

// dx_c = y_c * (dy_c - sum_k dy_k y_k); the sum is complete before dx is written, so
// dx may alias dy.
__global__ void SoftmaxBackwardKernel(int64_t positions, const float* y, const float* dy,
                                      int64_t channels, int64_t inner, float* dx) {
  CUDA_GRID_STRIDE_LOOP(position, positions) {
    const int64_t offset = (position / inner) * channels * inner + position % inner;
    float dot = 0.f;
    for (int64_t c = 0; c < channels; ++c) dot += dy[offset + c * inner] * y[offset + c * inner];
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t k = offset + c * inner;
      dx[k] = y[k] * (dy[k] - dot);
    }
  }
}

}  // namespace

void SoftmaxLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t positions = outer_ * inner_;
  if (channels_ == 0 || positions == 0) return;
  SoftmaxForwardKernel<<<CudaGridBlocks(positions), kCudaThreads>>>(
      positions, bottom[0]->gpu_data(), channels_, inner_, top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void SoftmaxLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t positions = outer_ * inner_;
  if (channels_ == 0 || positions == 0) return;
  SoftmaxBackwardKernel<<<CudaGridBlocks(positions), kCudaThreads>>>(
      positions, top[0]->gpu_data(), top[0]->gpu_diff(), channels_, inner_,
      bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
