// Device path of ReductionLayer: one block per reduced row (a deterministic sum in
// double, as on the CPU), and an elementwise backward pass.
#include "caffe/layers/reduction_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

struct ReductionTerm {
  const float* x;
  int64_t dim;
  ReductionParameter::ReductionOp op;
  __device__ double operator()(int64_t row, int64_t j) const {
    const double v = x[row * dim + j];
    switch (op) {
      case ReductionParameter::ASUM:
        return fabs(v);
      case ReductionParameter::SUMSQ:
        return v * v;
      default:  // SUM, MEAN (MEAN's 1 / dim is in the coefficient)
        return v;
    }
  }
};

__global__ void ReductionBackwardKernel(int64_t n, int64_t dim, float coeff,
                                        ReductionParameter::ReductionOp op, const float* x,
                                        const float* dy, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const float g = coeff * dy[i / dim];
    switch (op) {
      case ReductionParameter::ASUM:
        dx[i] = x[i] > 0 ? g : (x[i] < 0 ? -g : 0.f);
        break;
      case ReductionParameter::SUMSQ:
        dx[i] = 2 * g * x[i];
        break;
      default:  // SUM, MEAN
        dx[i] = g;
    }
  }
}

}  // namespace

void ReductionLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ReductionParameter::ReductionOp op = layer_param_.reduction_param().operation();
  SegmentSum(num_, dim_, ReductionTerm{bottom[0]->gpu_data(), dim_, op}, coeff_, false,
             top[0]->mutable_gpu_data());
}

void ReductionLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = num_ * dim_;
  if (count == 0) return;
  ReductionBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, dim_, coeff_, layer_param_.reduction_param().operation(), bottom[0]->gpu_data(),
      top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
