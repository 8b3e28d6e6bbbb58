#include "caffe/solvers/adam_solver.hpp"

#include <cmath>

#include "caffe/mode_math.hpp"
#include "caffe/solvers/update_rules.hpp"

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
  const Mode mode = context_->mode();
  ApplyRule(mode, p->count(), AdamRule{corrected_rate, beta1, beta2, eps}, MutableDiffOn(mode, p),
            MutableDataOn(mode, history_[param_id].get()),
            MutableDataOn(mode, history_[num_params + param_id].get()));
}

REGISTER_SOLVER_CLASS(Adam);

}  // namespace caffe
