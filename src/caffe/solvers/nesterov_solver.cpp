#include "caffe/solvers/nesterov_solver.hpp"

#include "caffe/mode_math.hpp"
#include "caffe/solvers/update_rules.hpp"

namespace caffe {

void NesterovSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const int64_t n = p->count();
  const float m = param_.momentum();
  const float local_rate = rate * net_->params_lr()[param_id];
  if (n == 0) return;
  const Mode mode = context_->mode();
  float* v = MutableDataOn(mode, history_[param_id].get());
  float* v_prev = MutableDataOn(mode, temp_[param_id].get());
  math::copy(mode, n, v, v_prev);
  math::axpby(mode, n, local_rate, DiffOn(mode, *p), m, v);
  ApplyRule(mode, n, NesterovStepRule{m}, MutableDiffOn(mode, p), v, v_prev);
}

REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace caffe
