// Device path of ContrastiveLossLayer: a - b and the squared distances stay on the
// device; the loss is summed there into the top (deterministic block sums).
#include <algorithm>

#include "caffe/layers/contrastive_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Keeps the dissimilar-pair gradient finite when the two embeddings coincide (the
// CPU path's constant).
constexpr float kDistanceFloor = 1e-4f;

// std::max(v, 0.f) as the host computes it ((v < 0) ? 0 : v): a NaN distance stays NaN,
// so the loss goes non-finite as on the CPU (fmaxf would return 0 and hide it).
__device__ inline float AtLeastZero(float v) { return v < 0.f ? 0.f : v; }

struct SquaredNormTerm {
  const float* diff;
  int64_t dim;
  __device__ double operator()(int64_t n, int64_t j) const {
    const double v = diff[n * dim + j];
    return v * v;
  }
};

struct ContrastiveTerm {
  const float* dist_sq;
  const float* similar;
  float margin;
  bool legacy;
  __device__ double operator()(int64_t, int64_t n) const {
    if (static_cast<int>(similar[n]) != 0) return dist_sq[n];
    if (legacy) return AtLeastZero(margin - dist_sq[n]);
    const double gap = AtLeastZero(margin - sqrtf(dist_sq[n]));
    return gap * gap;
  }
};

__global__ void ContrastiveBackwardKernel(int64_t count, int64_t dim, float g, float margin,
                                          bool legacy, const float* similar,
                                          const float* dist_sq, const float* diff, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, count) {
    const int64_t n = i / dim;
    float factor;
    if (static_cast<int>(similar[n]) != 0) {
      factor = 1;
    } else if (legacy) {
      factor = margin - dist_sq[n] > 0 ? -1.f : 0.f;
    } else {
      const float dist = sqrtf(dist_sq[n]);
      const float gap = margin - dist;
      factor = gap > 0 ? -gap / (dist + kDistanceFloor) : 0.f;
    }
    dx[i] = g * factor * diff[i];
  }
}

}  // namespace

void ContrastiveLossLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ContrastiveLossParameter& p = layer_param_.contrastive_loss_param();
  math::gpu_sub(bottom[0]->count(), bottom[0]->gpu_data(), bottom[1]->gpu_data(),
                diff_.mutable_gpu_data());
  dist_sq_gpu_.Reshape(vector<int64_t>{num_});
  SegmentSum(num_, dim_, SquaredNormTerm{diff_.gpu_data(), dim_}, 1.0, false,
             dist_sq_gpu_.mutable_gpu_data());
  SegmentSum(1, num_,
             ContrastiveTerm{dist_sq_gpu_.gpu_data(), bottom[2]->gpu_data(), p.margin(),
                             p.legacy_version()},
             1.0 / (2.0 * std::max<int64_t>(num_, 1)), false, top[0]->mutable_gpu_data());
}

void ContrastiveLossLayer::Backward_gpu(const vector<Blob*>& top,
                                        const vector<bool>& propagate_down,
                                        const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[2])
      << "cannot backpropagate to the similarity labels '" << bottom_name(2) << "'";
  const ContrastiveLossParameter& p = layer_param_.contrastive_loss_param();
  const int64_t count = bottom[0]->count();
  if (count == 0) return;
  for (int side = 0; side < 2; ++side) {
    if (!propagate_down[side]) continue;
    // d loss / d a = g (a - b) * factor; b gets the opposite sign.
    const float g = (side == 0 ? 1.f : -1.f) * top[0]->cpu_diff()[0] /
                    static_cast<float>(std::max<int64_t>(num_, 1));
    ContrastiveBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
        count, dim_, g, p.margin(), p.legacy_version(), bottom[2]->gpu_data(),
        dist_sq_gpu_.gpu_data(), diff_.gpu_data(), bottom[side]->mutable_gpu_diff());
    CUDA_CHECK(cudaPeekAtLastError());
  }
}

}  // namespace caffe
