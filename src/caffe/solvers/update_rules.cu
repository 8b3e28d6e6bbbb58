#include "caffe/solvers/update_rules.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

namespace {

template <typename Rule>
__global__ void ApplyRuleKernel(int64_t n, Rule rule, float* a, float* b, float* c) {
  CUDA_GRID_STRIDE_LOOP(i, n) { rule(i, a, b, c); }
}

}  // namespace

template <typename Rule>
void ApplyRuleOnDevice(int64_t n, const Rule& rule, float* a, float* b, float* c) {
  if (n == 0) return;
  ApplyRuleKernel<Rule><<<CudaGridBlocks(n), kCudaThreads>>>(n, rule, a, b, c);
  CUDA_CHECK(cudaPeekAtLastError());
}

template void ApplyRuleOnDevice(int64_t, const AdaGradRule&, float*, float*, float*);
template void ApplyRuleOnDevice(int64_t, const RMSPropRule&, float*, float*, float*);
template void ApplyRuleOnDevice(int64_t, const AdaDeltaRule&, float*, float*, float*);
template void ApplyRuleOnDevice(int64_t, const AdamRule&, float*, float*, float*);
template void ApplyRuleOnDevice(int64_t, const NesterovStepRule&, float*, float*, float*);

}  // namespace caffe
