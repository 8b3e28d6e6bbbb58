#include "caffe/solvers/adam_solver.hpp"

#include <cmath>

namespace caffe {

void AdamSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const size_t num_params = net_->learnable_params().size();
  const float local_rate = rate * net_->params_lr()[param_id];
  const float beta1 = param_.momentum();
  const float beta2 = param_.momentum2();
  const float eps = param_.delta();
  // Bias correction for step t = iter + 1 folds into the rate.
  const double t = iter_ + 1;
  const float corrected_rate = static_cast<float>(
      local_rate * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t)));
  float* m = history_[param_id]->mutable_cpu_data();
  float* v = history_[num_params + param_id]->mutable_cpu_data();
  float* g = p->mutable_cpu_diff();
  for (int64_t i = 0; i < p->count(); ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    g[i] = corrected_rate * m[i] / (std::sqrt(v[i]) + eps);
  }
}

REGISTER_SOLVER_CLASS(Adam);

}  // namespace caffe
