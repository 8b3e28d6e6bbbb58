// Device path of SigmoidCrossEntropyLossLayer. The loss and the number of counted
// (not ignored) targets are summed on the device in one launch; the host reads the
// two numbers back to pick the normalizer, as the CPU path does.
#include "caffe/layers/sigmoid_cross_entropy_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// Segment 0 sums the loss terms, segment 1 counts the targets that are not ignored.
struct SigmoidCrossEntropyTerm {
  const float* x;
  const float* t;
  bool has_ignore_label;
  int ignore_label;
  __device__ double operator()(int64_t segment, int64_t i) const {
    if (has_ignore_label && static_cast<int>(t[i]) == ignore_label) return 0;
    if (segment == 1) return 1;
    // max(x, 0) - x t + log(1 + exp(-|x|)): never overflows.
    return fmaxf(x[i], 0.f) - x[i] * t[i] + log1pf(expf(-fabsf(x[i])));
  }
};

__global__ void SigmoidCrossEntropyBackwardKernel(int64_t n, float scale, bool has_ignore_label,
                                                  int ignore_label, const float* x,
                                                  const float* t, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    if (has_ignore_label && static_cast<int>(t[i]) == ignore_label) {
      dx[i] = 0;
      continue;
    }
    // exp of a non-positive argument only, so neither branch overflows.
    const float e = expf(-fabsf(x[i]));
    const float sigmoid = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);
    dx[i] = scale * (sigmoid - t[i]);
  }
}

}  // namespace

void SigmoidCrossEntropyLossLayer::Forward_gpu(const vector<Blob*>& bottom,
                                               const vector<Blob*>& top) {
  sums_gpu_.Reshape(vector<int64_t>{2});
  SegmentSum(2, bottom[0]->count(),
             SigmoidCrossEntropyTerm{bottom[0]->gpu_data(), bottom[1]->gpu_data(),
                                     has_ignore_label_, ignore_label_},
             1.0, false, sums_gpu_.mutable_gpu_data());
  const float* sums = sums_gpu_.cpu_data();
  normalizer_ = Normalizer(normalization_, outer_, inner_, static_cast<int64_t>(sums[1]));
  top[0]->mutable_cpu_data()[0] = sums[0] / normalizer_;
}

void SigmoidCrossEntropyLossLayer::Backward_gpu(const vector<Blob*>& top,
                                                const vector<bool>& propagate_down,
                                                const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the targets '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  const int64_t n = bottom[0]->count();
  if (n == 0) return;
  const float scale = top[0]->cpu_diff()[0] / normalizer_;
  SigmoidCrossEntropyBackwardKernel<<<CudaGridBlocks(n), kCudaThreads>>>(
      n, scale, has_ignore_label_, ignore_label_, bottom[0]->gpu_data(), bottom[1]->gpu_data(),
      bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
