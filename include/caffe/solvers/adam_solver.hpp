// Adam: bias-corrected running first and second moments of the gradient
// (momentum = beta1, momentum2 = beta2, delta = epsilon).
#ifndef CAFFE_SOLVERS_ADAM_SOLVER_HPP_
#define CAFFE_SOLVERS_ADAM_SOLVER_HPP_

#include "caffe/solvers/sgd_solver.hpp"

namespace caffe {

class AdamSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "Adam"; }

 protected:
  void ComputeUpdateValue(int param_id, float rate) override;
  int HistorySetsPerParam() const override { return 2; }
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_ADAM_SOLVER_HPP_
