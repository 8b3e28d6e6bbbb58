#include "caffe/solvers/adadelta_solver.hpp"

#include <cmath>

namespace caffe {

void AdaDeltaSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const size_t num_params = net_->learnable_params().size();
  const float local_rate = rate * net_->params_lr()[param_id];
  const float m = param_.momentum();
  const float delta = param_.delta();
  float* grad_sq = history_[param_id]->mutable_cpu_data();
  float* step_sq = history_[num_params + param_id]->mutable_cpu_data();
  float* g = p->mutable_cpu_diff();
  for (int64_t i = 0; i < p->count(); ++i) {
    grad_sq[i] = m * grad_sq[i] + (1 - m) * g[i] * g[i];
    const float step = g[i] * std::sqrt(step_sq[i] + delta) / std::sqrt(grad_sq[i] + delta);
    step_sq[i] = m * step_sq[i] + (1 - m) * step * step;
    g[i] = local_rate * step;
  }
}

REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace caffe
