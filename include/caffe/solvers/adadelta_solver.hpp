// AdaDelta: steps scaled by the ratio of running RMS of past steps to running RMS of
// gradients, so the units of the step match the weights.
#ifndef CAFFE_SOLVERS_ADADELTA_SOLVER_HPP_
#define CAFFE_SOLVERS_ADADELTA_SOLVER_HPP_

#include "caffe/solvers/sgd_solver.hpp"

namespace caffe {

class AdaDeltaSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "AdaDelta"; }

 protected:
  void ComputeUpdateValue(int param_id, float rate) override;
  int HistorySetsPerParam() const override { return 2; }
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_ADADELTA_SOLVER_HPP_
