// SoftmaxWithLoss on the device. The softmax is the inner Softmax layer (it shares
// this layer's context, so it runs on the device too). Per-position losses are summed
// in double by a single fixed-order reduction, like the host's double accumulator, so
// the loss does not depend on thread timing.
#include <cfloat>

#include "caffe/layers/softmax_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

constexpr float kCounted = 1.f, kIgnored = 0.f, kOutOfRange = -1.f;

__global__ void PositionLossKernel(int64_t positions, const float* prob, const float* label,
                                   int64_t channels, int64_t inner, bool has_ignore_label,
                                   int ignore_label, float* loss, float* status) {
  CUDA_GRID_STRIDE_LOOP(position, positions) {
    const int c = static_cast<int>(label[position]);
    loss[position] = 0.f;
    if (has_ignore_label && c == ignore_label) {
      status[position] = kIgnored;
    } else if (c < 0 || c >= channels) {
      status[position] = kOutOfRange;
    } else {
      const int64_t o = position / inner, i = position % inner;
      const float p = prob[(o * channels + c) * inner + i];
      // std::max(p, FLT_MIN) as on the host: an underflowed 0 gives a large finite loss.
      loss[position] = -logf(p < FLT_MIN ? FLT_MIN : p);
      status[position] = kCounted;
    }
  }
}

// One block: totals = {sum of loss, positions counted, positions out of range}.
__global__ void LossTotalsKernel(int64_t positions, const float* loss, const float* status,
                                 double* totals) {
  __shared__ double part[3][kCudaThreads];
  double sums[3] = {0, 0, 0};
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
    sums[0] += loss[p];
    sums[1] += status[p] == kCounted ? 1 : 0;
    sums[2] += status[p] == kOutOfRange ? 1 : 0;
  }
  for (int k = 0; k < 3; ++k) part[k][threadIdx.x] = sums[k];
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      for (int k = 0; k < 3; ++k) part[k][threadIdx.x] += part[k][threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < 3; ++k) totals[k] = part[k][0];
  }
}

// dx = prob on entry; subtracts 1 at the label and zeroes ignored positions.
__global__ void LossGradientKernel(int64_t positions, const float* label, int64_t channels,
                                   int64_t inner, bool has_ignore_label, int ignore_label,
                                   float* dx) {
  CUDA_GRID_STRIDE_LOOP(position, positions) {
    const int c = static_cast<int>(label[position]);
    const int64_t o = position / inner, i = position % inner;
    float* column = dx + o * channels * inner + i;
    if (has_ignore_label && c == ignore_label) {
      for (int64_t k = 0; k < channels; ++k) column[k * inner] = 0.f;
    } else if (c >= 0 && c < channels) {  // forward has rejected any other label
      column[c * inner] -= 1.f;
    }
  }
}

}  // namespace

void SoftmaxWithLossLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  const int64_t positions = outer_ * inner_;
  double totals[3] = {0, 0, 0};
  if (positions > 0) {
    position_loss_.Reshape({positions});
    PositionLossKernel<<<CudaGridBlocks(positions), kCudaThreads>>>(
        positions, prob_.gpu_data(), bottom[1]->gpu_data(), channels_, inner_,
        has_ignore_label_, ignore_label_, position_loss_.mutable_gpu_data(),
        position_loss_.mutable_gpu_diff());
    CUDA_CHECK(cudaPeekAtLastError());
    double* device_totals = static_cast<double*>(loss_totals_.mutable_gpu_data());
    LossTotalsKernel<<<1, kCudaThreads>>>(positions, position_loss_.gpu_data(),
                                          position_loss_.gpu_diff(), device_totals);
    CUDA_CHECK(cudaPeekAtLastError());
    CUDA_CHECK(cudaMemcpy(totals, device_totals, sizeof(totals), cudaMemcpyDeviceToHost));
  }
  if (totals[2] > 0) {
    // Report the first bad label, with the host path's message.
    const float* label = bottom[1]->cpu_data();
    for (int64_t p = 0; p < positions; ++p) {
      const int c = static_cast<int>(label[p]);
      if (!IsIgnored(c) && (c < 0 || c >= channels_)) FailLabelOutOfRange(label[p], p);
    }
  }
  valid_count_ = static_cast<int64_t>(totals[1]);
  top[0]->mutable_cpu_data()[0] = static_cast<float>(
      totals[0] / Normalizer(normalization_, outer_, inner_, valid_count_));
}

void SoftmaxWithLossLayer::Backward_gpu(const vector<Blob*>& top,
                                        const vector<bool>& propagate_down,
                                        const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the label bottom '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  float* dx = bottom[0]->mutable_gpu_diff();
  math::gpu_copy(prob_.count(), prob_.gpu_data(), dx);
  const int64_t positions = outer_ * inner_;
  if (positions > 0) {
    LossGradientKernel<<<CudaGridBlocks(positions), kCudaThreads>>>(
        positions, bottom[1]->gpu_data(), channels_, inner_, has_ignore_label_, ignore_label_,
        dx);
    CUDA_CHECK(cudaPeekAtLastError());
  }
  const float scale =
      top[0]->cpu_diff()[0] / Normalizer(normalization_, outer_, inner_, valid_count_);
  math::gpu_scal(prob_.count(), scale, dx);
}

}  // namespace caffe
