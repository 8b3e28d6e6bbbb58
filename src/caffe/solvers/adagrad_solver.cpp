#include "caffe/solvers/adagrad_solver.hpp"

#include "caffe/mode_math.hpp"
#include "caffe/solvers/update_rules.hpp"

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
  const Mode mode = context_->mode();
  ApplyRule(mode, p->count(), AdaGradRule{local_rate, delta}, MutableDiffOn(mode, p),
            MutableDataOn(mode, history_[param_id].get()), nullptr);
}

REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace caffe
