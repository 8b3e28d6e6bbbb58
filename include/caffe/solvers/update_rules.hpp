// The per-element update rules of the solvers that are not plain BLAS, each written
// once: ApplyRule runs the same operator() in a host loop (Mode::CPU) or in a device
// kernel (Mode::GPU, update_rules.cu), so a GPU net's update never leaves the device
// and the CPU tests check the arithmetic the device runs.
//
// A rule is called as rule(i, a, b, c) for every element i < n, on three arrays whose
// meaning the rule names (the gradient that becomes the step, then its history sets).
#ifndef CAFFE_SOLVERS_UPDATE_RULES_HPP_
#define CAFFE_SOLVERS_UPDATE_RULES_HPP_

#include <cmath>
#include <cstdint>

#include "caffe/common.hpp"

#ifdef __CUDACC__
#define CAFFE_RULE_HD __host__ __device__
#else
#define CAFFE_RULE_HD
#endif

namespace caffe {

// AdaGrad: h += g^2; step = rate g / (sqrt(h) + delta). Arrays: g, h.
struct AdaGradRule {
  float rate, delta;
  CAFFE_RULE_HD void operator()(int64_t i, float* g, float* h, float*) const {
    h[i] += g[i] * g[i];
    g[i] = rate * g[i] / (sqrtf(h[i]) + delta);
  }
};

// RMSProp: h = decay h + (1 - decay) g^2; step = rate g / (sqrt(h) + delta). Arrays: g, h.
struct RMSPropRule {
  float rate, decay, delta;
  CAFFE_RULE_HD void operator()(int64_t i, float* g, float* h, float*) const {
    h[i] = decay * h[i] + (1 - decay) * g[i] * g[i];
    g[i] = rate * g[i] / (sqrtf(h[i]) + delta);
  }
};

// AdaDelta: running squares of gradients and of steps. Arrays: g, grad_sq, step_sq.
struct AdaDeltaRule {
  float rate, momentum, delta;
  CAFFE_RULE_HD void operator()(int64_t i, float* g, float* grad_sq, float* step_sq) const {
    grad_sq[i] = momentum * grad_sq[i] + (1 - momentum) * g[i] * g[i];
    const float step = g[i] * sqrtf(step_sq[i] + delta) / sqrtf(grad_sq[i] + delta);
    step_sq[i] = momentum * step_sq[i] + (1 - momentum) * step * step;
    g[i] = rate * step;
  }
};

// Adam with the bias correction folded into `corrected_rate`. Arrays: g, m, v.
struct AdamRule {
  float corrected_rate, beta1, beta2, eps;
  CAFFE_RULE_HD void operator()(int64_t i, float* g, float* m, float* v) const {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    g[i] = corrected_rate * m[i] / (sqrtf(v[i]) + eps);
  }
};

// Nesterov's step from the new and the previous velocity: (1 + m) v - m v_prev.
// Arrays: step (written), v, v_prev.
struct NesterovStepRule {
  float momentum;
  CAFFE_RULE_HD void operator()(int64_t i, float* step, float* v, float* v_prev) const {
    step[i] = (1 + momentum) * v[i] - momentum * v_prev[i];
  }
};

// Runs `rule` over i < n on arrays in `mode`'s memory (c may be null where the rule
// does not read it). Instantiated for the rules above.
template <typename Rule>
void ApplyRule(Mode mode, int64_t n, const Rule& rule, float* a, float* b, float* c);

#ifdef USE_CUDA
// The device half of ApplyRule (update_rules.cu).
template <typename Rule>
void ApplyRuleOnDevice(int64_t n, const Rule& rule, float* a, float* b, float* c);
#endif

}  // namespace caffe

#endif  // CAFFE_SOLVERS_UPDATE_RULES_HPP_
