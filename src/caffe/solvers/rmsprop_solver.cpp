#include "caffe/solvers/rmsprop_solver.hpp"

#include "caffe/mode_math.hpp"
#include "caffe/solvers/update_rules.hpp"

namespace caffe {

RMSPropSolver::RMSPropSolver(const SolverParameter& param, shared_ptr<Context> context,
                             const string& source)
    : SGDSolver(param, std::move(context), source) {
  CAFFE_REQUIRE(param_.momentum() == 0)
      << source_ << ": RMSProp takes no momentum (found " << param_.momentum() << ")";
  CAFFE_REQUIRE(param_.rms_decay() >= 0 && param_.rms_decay() < 1)
      << source_ << ": rms_decay must lie in [0, 1), found " << param_.rms_decay();
}

void RMSPropSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const float local_rate = rate * net_->params_lr()[param_id];
  const float decay = param_.rms_decay();
  const float delta = param_.delta();
  const Mode mode = context_->mode();
  ApplyRule(mode, p->count(), RMSPropRule{local_rate, decay, delta}, MutableDiffOn(mode, p),
            MutableDataOn(mode, history_[param_id].get()), nullptr);
}

REGISTER_SOLVER_CLASS(RMSProp);

}  // namespace caffe
