#include "caffe/solvers/adadelta_solver.hpp"

#include "caffe/mode_math.hpp"
#include "caffe/solvers/update_rules.hpp"

namespace caffe {

void AdaDeltaSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const size_t num_params = net_->learnable_params().size();
  const float local_rate = rate * net_->params_lr()[param_id];
  const float m = param_.momentum();
  const float delta = param_.delta();
  const Mode mode = context_->mode();
  ApplyRule(mode, p->count(), AdaDeltaRule{local_rate, m, delta}, MutableDiffOn(mode, p),
            MutableDataOn(mode, history_[param_id].get()),
            MutableDataOn(mode, history_[num_params + param_id].get()));
}

REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace caffe
