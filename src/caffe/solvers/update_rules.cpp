#include "caffe/solvers/update_rules.hpp"

namespace caffe {

template <typename Rule>
void ApplyRule(Mode mode, int64_t n, const Rule& rule, float* a, float* b, float* c) {
  if (mode == Mode::GPU) {
#ifdef USE_CUDA
    ApplyRuleOnDevice(n, rule, a, b, c);
    return;
#else
    LOG(FATAL) << "a GPU-mode solver update in a CPU-only build";
#endif
  }
  for (int64_t i = 0; i < n; ++i) rule(i, a, b, c);
}

template void ApplyRule(Mode, int64_t, const AdaGradRule&, float*, float*, float*);
template void ApplyRule(Mode, int64_t, const RMSPropRule&, float*, float*, float*);
template void ApplyRule(Mode, int64_t, const AdaDeltaRule&, float*, float*, float*);
template void ApplyRule(Mode, int64_t, const AdamRule&, float*, float*, float*);
template void ApplyRule(Mode, int64_t, const NesterovStepRule&, float*, float*, float*);

}  // namespace caffe
