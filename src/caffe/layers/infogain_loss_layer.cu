// Device path of InfogainLossLayer. Labels are checked (and the counted ones tallied
// for the normalizer) on the host, as on the CPU path: one label per prediction,
// normally produced on the host. The probabilities, H and the gradient stay on the
// device; the loss is summed there (deterministic block sum) into the top.
#include "caffe/layers/infogain_loss_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Probabilities are clamped here so that log(0) cannot produce an infinite loss (the
// CPU path's constant).
constexpr float kMinProbability = 1e-20f;

// std::max(p, kMinProbability) as the host computes it ((p < min) ? min : p): a NaN
// probability stays NaN, so the loss goes non-finite as on the CPU. fmaxf would return
// the clamp instead and turn a diverged net's NaN into a finite loss.
__device__ inline float ClampProbability(float p) {
  return p < kMinProbability ? kMinProbability : p;
}

// Where class k of prediction `position` (= o * inner + i) lives in the probabilities:
// classes run along the axis between outer and inner.
__device__ inline int64_t ProbabilityIndex(int64_t position, int64_t k, int64_t num_labels,
                                           int64_t inner) {
  return ((position / inner) * num_labels + k) * inner + position % inner;
}

struct InfogainLayout {
  const float* p;
  const float* labels;
  const float* h;  // num_labels x num_labels
  int64_t num_labels, inner;
  bool has_ignore_label;
  int ignore_label;
  __device__ bool Ignored(int64_t position) const {
    return has_ignore_label && static_cast<int>(labels[position]) == ignore_label;
  }
  __device__ float H(int64_t position, int64_t k) const {
    return h[static_cast<int64_t>(labels[position]) * num_labels + k];
  }
};

// Term j = position * num_labels + k of the (unnormalized) loss.
struct InfogainTerm {
  InfogainLayout layout;
  __device__ double operator()(int64_t, int64_t j) const {
    const int64_t position = j / layout.num_labels, k = j % layout.num_labels;
    if (layout.Ignored(position)) return 0;
    const float p =
        layout.p[ProbabilityIndex(position, k, layout.num_labels, layout.inner)];
    return -double(layout.H(position, k)) * log(ClampProbability(p));
  }
};

// One thread per (position, class); ignored positions keep the zero gradient.
__global__ void InfogainBackwardKernel(int64_t n, float scale, InfogainLayout layout,
                                       float* dp) {
  CUDA_GRID_STRIDE_LOOP(j, n) {
    const int64_t position = j / layout.num_labels, k = j % layout.num_labels;
    if (layout.Ignored(position)) continue;
    const int64_t index = ProbabilityIndex(position, k, layout.num_labels, layout.inner);
    dp[index] = scale * layout.H(position, k) / ClampProbability(layout.p[index]);
  }
}

}  // namespace

void InfogainLossLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* host_labels = bottom[1]->cpu_data();
  const int64_t positions = outer_ * inner_;
  int64_t valid = 0;
  for (int64_t pos = 0; pos < positions; ++pos) {
    if (Ignored(host_labels, pos)) continue;
    LabelAt(host_labels, pos);
    ++valid;
  }
  normalizer_ = Normalizer(NormalizationMode(), outer_, inner_, valid);
  const InfogainLayout layout{bottom[0]->gpu_data(),
                              bottom[1]->gpu_data(),
                              (bottom.size() > 2 ? bottom[2] : &infogain_)->gpu_data(),
                              num_labels_,
                              inner_,
                              has_ignore_label_,
                              ignore_label_};
  SegmentSum(1, positions * num_labels_, InfogainTerm{layout}, 1.0 / normalizer_, false,
             top[0]->mutable_gpu_data());
}

void InfogainLossLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  RequirePredictionGradientOnly(propagate_down);
  if (!propagate_down[0]) return;
  float* dp = bottom[0]->mutable_gpu_diff();
  math::gpu_set(bottom[0]->count(), 0.f, dp);
  const int64_t n = outer_ * inner_ * num_labels_;
  if (n == 0) return;
  const float scale = -top[0]->cpu_diff()[0] / normalizer_;
  const InfogainLayout layout{bottom[0]->gpu_data(),
                              bottom[1]->gpu_data(),
                              (bottom.size() > 2 ? bottom[2] : &infogain_)->gpu_data(),
                              num_labels_,
                              inner_,
                              has_ignore_label_,
                              ignore_label_};
  InfogainBackwardKernel<<<CudaGridBlocks(n), kCudaThreads>>>(n, scale, layout, dp);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
