// Device path of HingeLossLayer. Labels are checked on the host, as on the CPU path
// (same error message; they are N numbers, normally produced on the host anyway);
// the loss is summed on the device into the top.
#include <algorithm>

#include "caffe/layers/hinge_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// Term i = n * dim + k: max(0, 1 -+ x)^p, minus for the labelled class.
struct HingeTerm {
  const float* x;
  const float* labels;
  int64_t dim;
  bool l2;
  __device__ double operator()(int64_t, int64_t i) const {
    const int64_t label = static_cast<int64_t>(labels[i / dim]);
    const float score = x[i];
    const double margin = fmaxf(0.f, 1 + (i % dim == label ? -score : score));
    return l2 ? margin * margin : margin;
  }
};

__global__ void HingeBackwardKernel(int64_t count, int64_t dim, float scale, bool l2,
                                    const float* x, const float* labels, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, count) {
    const int64_t label = static_cast<int64_t>(labels[i / dim]);
    const float sign = i % dim == label ? -1.f : 1.f;
    const float margin = 1 + sign * x[i];
    dx[i] = margin <= 0 ? 0.f : scale * sign * (l2 ? 2 * margin : 1.f);
  }
}

}  // namespace

void HingeLossLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* host_labels = bottom[1]->cpu_data();
  for (int64_t n = 0; n < num_; ++n) LabelAt(host_labels, n);
  const bool l2 = layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  SegmentSum(1, num_ * dim_, HingeTerm{bottom[0]->gpu_data(), bottom[1]->gpu_data(), dim_, l2},
             1.0 / std::max<int64_t>(num_, 1), false, top[0]->mutable_gpu_data());
}

void HingeLossLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot backpropagate to the labels '" << bottom_name(1) << "'";
  if (!propagate_down[0]) return;
  const int64_t count = num_ * dim_;
  if (count == 0) return;
  const bool l2 = layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  const float scale = top[0]->cpu_diff()[0] / std::max<int64_t>(num_, 1);
  HingeBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, dim_, scale, l2, bottom[0]->gpu_data(), bottom[1]->gpu_data(),
      bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
