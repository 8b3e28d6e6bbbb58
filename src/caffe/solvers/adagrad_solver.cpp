#include "caffe/solvers/adagrad_solver.hpp"

#include <cmath>

namespace caffe {

AdaGradSolver::AdaGradSolver(const SolverParameter& param, shared_ptr<Context> context,
                             const string& source)
    : SGDSolver(param, std::move(context), source) {
  CAFFE_REQUIRE(param_.momentum() == 0)
      << source_ << ": AdaGrad takes no momentum (found " << param_.momentum() << ")";
}

void AdaGradSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const float local_rate = rate * net_->params_lr()[param_id];
  const float delta = param_.delta();
  float* h = history_[param_id]->mutable_cpu_data();
  float* g = p->mutable_cpu_diff();
  for (int64_t i = 0; i < p->count(); ++i) {
    h[i] += g[i] * g[i];
    g[i] = local_rate * g[i] / (std::sqrt(h[i]) + delta);
  }
}

REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace caffe
