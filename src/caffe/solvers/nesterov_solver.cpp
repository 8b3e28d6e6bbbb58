#include "caffe/solvers/nesterov_solver.hpp"

#include "caffe/util/math_functions.hpp"

namespace caffe {

void NesterovSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const int64_t n = p->count();
  const float m = param_.momentum();
  const float local_rate = rate * net_->params_lr()[param_id];
  float* v = history_[param_id]->mutable_cpu_data();
  float* v_prev = temp_[param_id]->mutable_cpu_data();
  math::copy(n, v, v_prev);
  math::axpby(n, local_rate, p->cpu_diff(), m, v);
  // step = (1 + m) v_new - m v_old
  float* step = p->mutable_cpu_diff();
  for (int64_t i = 0; i < n; ++i) step[i] = (1 + m) * v[i] - m * v_prev[i];
}

REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace caffe
