// Only descriptor set-up and cuDNN calls: there is no kernel of our own, so this is a
// .cpp compiled by the host compiler in builds with cuDNN.
#ifdef USE_CUDNN

#include "caffe/layers/cudnn_convolution_layer.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "caffe/util/cudnn.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

struct CudnnConvolutionLayer::State {
  cudnn::TensorDescriptor bottom, top, bias;
  cudnn::FilterDescriptor filter;
  cudnn::ConvolutionDescriptor convolution;
  bool weights_described = false;  // filter, convolution, bias: fixed at setup
  vector<int64_t> described_shape;  // the bottom shape `bottom` and `top` describe

  struct Algorithms {
    bool have_forward = false;
    cudnnConvolutionFwdAlgo_t forward{};
    size_t forward_bytes = 0;
    bool have_backward = false;
    cudnnConvolutionBwdDataAlgo_t backward_data{};
    size_t backward_data_bytes = 0;
    cudnnConvolutionBwdFilterAlgo_t backward_filter{};
    size_t backward_filter_bytes = 0;
  };
  // Per bottom shape, so a net that alternates shapes (train and test batches) measures
  // each once. Map nodes do not move, so `current` stays valid as entries are added.
  std::map<vector<int64_t>, Algorithms> algorithms;
  Algorithms* current = nullptr;
};

namespace {

// From cudnnFind*'s results (fastest first), the fastest algorithm that ran, fits the
// workspace limit and uses FP32 math, preferring a deterministic one: the reference
// path is deterministic, and runs that can be repeated bit for bit are worth a little
// speed. False when nothing qualifies.
template <typename Perf>
bool PickAlgorithm(const Perf* results, int count, size_t limit_bytes, Perf* chosen) {
  const Perf* fastest = nullptr;
  for (int i = 0; i < count; ++i) {
    const Perf& result = results[i];
    if (result.status != CUDNN_STATUS_SUCCESS || result.memory > limit_bytes) continue;
    // The convolution descriptor asks for FMA math; this guards against a result that
    // reports tensor-core math anyway (TF32 would change the numbers).
    if (result.mathType == CUDNN_TENSOR_OP_MATH ||
        result.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      continue;
    }
    if (result.determinism == CUDNN_DETERMINISTIC) {
      *chosen = result;
      return true;
    }
    if (fastest == nullptr) fastest = &result;
  }
  if (fastest == nullptr) return false;
  *chosen = *fastest;
  return true;
}

}  // namespace

CudnnConvolutionLayer::CudnnConvolutionLayer(const LayerParameter& param)
    : ConvolutionLayer(param), cudnn_(std::make_unique<State>()) {}

CudnnConvolutionLayer::~CudnnConvolutionLayer() = default;

void CudnnConvolutionLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ConvolutionLayer::LayerSetUp(bottom, top);
  const uint64_t limit_mb = layer_param_.convolution_param().cudnn_workspace_limit_mb();
  constexpr uint64_t kMaxMb = std::numeric_limits<size_t>::max() >> 20;
  workspace_limit_bytes_ = static_cast<size_t>(limit_mb < kMaxMb ? limit_mb : kMaxMb) << 20;
}

bool CudnnConvolutionLayer::CudnnCanRun(const Blob& bottom, const Blob& top) const {
  if (num_spatial_axes_ != 2) return false;
  const int h = channel_axis_ + 1, w = channel_axis_ + 2;
  return cudnn::FitsInt(num_, channels_, bottom.shape(h), bottom.shape(w)) &&
         cudnn::FitsInt(num_, num_output_, top.shape(h), top.shape(w));
}

void CudnnConvolutionLayer::Prepare(const Blob& bottom, const Blob& top, bool backward) {
  State& s = *cudnn_;
  if (!s.weights_described) {
    cudnn::SetFilter4d(&s.filter, num_output_, channels_ / group_, kernel_shape_[0],
                       kernel_shape_[1]);
    // Caffe's convolution does not flip the kernel: cross-correlation.
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(s.convolution.get(), pad_[0], pad_[1],
                                                stride_[0], stride_[1], dilation_[0],
                                                dilation_[1], CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(s.convolution.get(), group_));
    // Plain FP32 (no TF32 tensor cores), so results match the reference path.
    CUDNN_CHECK(cudnnSetConvolutionMathType(s.convolution.get(), CUDNN_FMA_MATH));
    if (bias_term_) cudnn::SetTensor4d(&s.bias, 1, num_output_, 1, 1);
    s.weights_described = true;
  }
  if (s.described_shape != bottom.shape() || s.current == nullptr) {
    const int h = channel_axis_ + 1, w = channel_axis_ + 2;
    cudnn::SetTensor4d(&s.bottom, num_, channels_, static_cast<int>(bottom.shape(h)),
                       static_cast<int>(bottom.shape(w)));
    cudnn::SetTensor4d(&s.top, num_, num_output_, static_cast<int>(top.shape(h)),
                       static_cast<int>(top.shape(w)));
    s.described_shape = bottom.shape();
    s.current = &s.algorithms[bottom.shape()];
  }
  State::Algorithms& a = *s.current;
  cudnnHandle_t handle = cudnn::Handle();
  if (!a.have_forward) {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, s.bottom.get(), s.filter.get(),
                                                     s.convolution.get(), s.top.get(),
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                                     results));
    cudnnConvolutionFwdAlgoPerf_t chosen{};
    LAYER_REQUIRE(PickAlgorithm(results, count, workspace_limit_bytes_, &chosen))
        << "no cuDNN forward convolution algorithm for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(bottom.shape())
        << " fits convolution_param.cudnn_workspace_limit_mb "
        << layer_param_.convolution_param().cudnn_workspace_limit_mb();
    a.forward = chosen.algo;
    // The workspace the execution needs is what cudnnGet*WorkspaceSize reports for these
    // descriptors (FMA math); a trial's `memory` may come from another math type.
    size_t bytes = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, s.bottom.get(), s.filter.get(),
                                                        s.convolution.get(), s.top.get(),
                                                        chosen.algo, &bytes));
    a.forward_bytes = std::max(chosen.memory, bytes);
    a.have_forward = true;
  }
  if (backward && !a.have_backward) {
    cudnnConvolutionBwdDataAlgoPerf_t data_results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int data_count = 0;
    CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        handle, s.filter.get(), s.top.get(), s.convolution.get(), s.bottom.get(),
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &data_count, data_results));
    cudnnConvolutionBwdDataAlgoPerf_t data{};
    cudnnConvolutionBwdFilterAlgoPerf_t filter_results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int filter_count = 0;
    CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
        handle, s.bottom.get(), s.top.get(), s.convolution.get(), s.filter.get(),
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &filter_count, filter_results));
    cudnnConvolutionBwdFilterAlgoPerf_t filter{};
    LAYER_REQUIRE(PickAlgorithm(data_results, data_count, workspace_limit_bytes_, &data) &&
                  PickAlgorithm(filter_results, filter_count, workspace_limit_bytes_, &filter))
        << "no cuDNN backward convolution algorithm for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(bottom.shape())
        << " fits convolution_param.cudnn_workspace_limit_mb "
        << layer_param_.convolution_param().cudnn_workspace_limit_mb();
    a.backward_data = data.algo;
    a.backward_filter = filter.algo;
    size_t data_bytes = 0, filter_bytes = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, s.filter.get(), s.top.get(), s.convolution.get(), s.bottom.get(), data.algo,
        &data_bytes));
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, s.bottom.get(), s.top.get(), s.convolution.get(), s.filter.get(), filter.algo,
        &filter_bytes));
    a.backward_data_bytes = std::max(data.memory, data_bytes);
    a.backward_filter_bytes = std::max(filter.memory, filter_bytes);
    a.have_backward = true;
  }
}

void CudnnConvolutionLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!CudnnCanRun(*bottom[0], *top[0])) {
    ConvolutionLayer::Forward_gpu(bottom, top);
    return;
  }
  Prepare(*bottom[0], *top[0], /*backward=*/false);
  State& s = *cudnn_;
  const State::Algorithms& a = *s.current;
  cudnnHandle_t handle = cudnn::Handle();
  void* workspace = cudnn::Workspace(a.forward_bytes);
  const float* weights = blobs_[0]->gpu_data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    float* y = top[i]->mutable_gpu_data();
    CUDNN_CHECK(cudnnConvolutionForward(handle, &cudnn::kOne, s.bottom.get(),
                                        bottom[i]->gpu_data(), s.filter.get(), weights,
                                        s.convolution.get(), a.forward, workspace,
                                        a.forward_bytes, &cudnn::kZero, s.top.get(), y));
    if (bias_term_) {
      CUDNN_CHECK(cudnnAddTensor(handle, &cudnn::kOne, s.bias.get(), blobs_[1]->gpu_data(),
                                 &cudnn::kOne, s.top.get(), y));
    }
  }
}

void CudnnConvolutionLayer::Backward_gpu(const vector<Blob*>& top,
                                         const vector<bool>& propagate_down,
                                         const vector<Blob*>& bottom) {
  if (!CudnnCanRun(*bottom[0], *top[0])) {
    ConvolutionLayer::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  bool any_data_grad = false;
  for (size_t i = 0; i < bottom.size(); ++i) any_data_grad |= propagate_down[i];
  if (!weight_grad && !bias_grad && !any_data_grad) return;

  Prepare(*bottom[0], *top[0], /*backward=*/true);
  State& s = *cudnn_;
  const State::Algorithms& a = *s.current;
  cudnnHandle_t handle = cudnn::Handle();
  const size_t workspace_bytes = std::max(a.backward_data_bytes, a.backward_filter_bytes);
  void* workspace = cudnn::Workspace(workspace_bytes);
  const float* weights = blobs_[0]->gpu_data();
  for (size_t i = 0; i < top.size(); ++i) {
    const float* dy = top[i]->gpu_diff();
    // Weight and bias gradients accumulate over bottoms and calls (beta = 1), as in
    // the reference path; bottom gradients are overwritten (beta = 0).
    if (bias_grad) {
      CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &cudnn::kOne, s.top.get(), dy,
                                               &cudnn::kOne, s.bias.get(),
                                               blobs_[1]->mutable_gpu_diff()));
    }
    if (weight_grad) {
      CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          handle, &cudnn::kOne, s.bottom.get(), bottom[i]->gpu_data(), s.top.get(), dy,
          s.convolution.get(), a.backward_filter, workspace, a.backward_filter_bytes,
          &cudnn::kOne, s.filter.get(), blobs_[0]->mutable_gpu_diff()));
    }
    if (propagate_down[i]) {
      CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, &cudnn::kOne, s.filter.get(), weights, s.top.get(), dy, s.convolution.get(),
          a.backward_data, workspace, a.backward_data_bytes, &cudnn::kZero, s.bottom.get(),
          bottom[i]->mutable_gpu_diff()));
    }
  }
}

}  // namespace caffe

#endif  // USE_CUDNN
