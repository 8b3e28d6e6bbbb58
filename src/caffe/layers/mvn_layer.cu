// Device path of MVNLayer: one block per normalized group, which sums its group with
// a fixed reduction tree (deterministic) in double, as the CPU path does.
#include "caffe/layers/mvn_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

// Safe in place: every read of the group (both sums) happens before the first write,
// since BlockSum synchronises the block.
__global__ void MVNForwardKernel(int64_t groups, int64_t dim, bool normalize_variance,
                                 double eps, const float* x, float* y, float* stddev) {
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const float* xg = x + g * dim;
    float* yg = y + g * dim;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) sum += xg[j];
    const double total = BlockSum(sum);
    const double mean = dim > 0 ? total / dim : 0;
    double scale = 1;
    if (normalize_variance) {
      // Two passes: the variance of centred values does not cancel catastrophically.
      double sq = 0;
      for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) sq += (xg[j] - mean) * (xg[j] - mean);
      sq = BlockSum(sq);
      const double s = sqrt(dim > 0 ? sq / dim : 0);
      if (threadIdx.x == 0) stddev[g] = static_cast<float>(s);
      scale = 1.0 / (s + eps);
    }
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      yg[j] = static_cast<float>((xg[j] - mean) * scale);
    }
  }
}

// dx = (dy - mean(dy) - y * mean(y dy) * d / s) / d with d = s + eps (see the CPU
// path); without variance normalization dx = dy - mean(dy). Safe in place, as above.
__global__ void MVNBackwardKernel(int64_t groups, int64_t dim, bool normalize_variance,
                                  double eps, const float* y, const float* dy,
                                  const float* stddev, float* dx) {
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const float* yg = y + g * dim;
    const float* dyg = dy + g * dim;
    float* dxg = dx + g * dim;
    double sum_dy = 0, sum_y_dy = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      sum_dy += dyg[j];
      sum_y_dy += double(yg[j]) * dyg[j];
    }
    sum_dy = BlockSum(sum_dy);
    sum_y_dy = BlockSum(sum_y_dy);
    const double mean_dy = dim > 0 ? sum_dy / dim : 0;
    if (!normalize_variance) {
      for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
        dxg[j] = static_cast<float>(dyg[j] - mean_dy);
      }
      continue;
    }
    const double s = stddev[g];
    const double d = s + eps;
    const double mean_y_dy = dim > 0 ? sum_y_dy / dim : 0;
    const double k = s > 0 ? mean_y_dy * d / s : 0;  // a constant group has y = 0
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      dxg[j] = static_cast<float>((dyg[j] - mean_dy - yg[j] * k) / d);
    }
  }
}

int GroupBlocks(int64_t groups) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(groups, 65535)));
}

}  // namespace

void MVNLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const MVNParameter& p = layer_param_.mvn_param();
  stddev_gpu_.Reshape(vector<int64_t>{groups_});
  if (groups_ == 0) return;
  MVNForwardKernel<<<GroupBlocks(groups_), kCudaThreads>>>(
      groups_, dim_, p.normalize_variance(), p.eps(), bottom[0]->gpu_data(),
      top[0]->mutable_gpu_data(), stddev_gpu_.mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void MVNLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) {
  if (!propagate_down[0] || groups_ == 0) return;
  const MVNParameter& p = layer_param_.mvn_param();
  MVNBackwardKernel<<<GroupBlocks(groups_), kCudaThreads>>>(
      groups_, dim_, p.normalize_variance(), p.eps(), top[0]->gpu_data(), top[0]->gpu_diff(),
      stddev_gpu_.gpu_data(), bottom[0]->mutable_gpu_diff());
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
