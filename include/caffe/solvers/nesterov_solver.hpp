// Nesterov's accelerated gradient: the step looks ahead along the momentum.
#ifndef CAFFE_SOLVERS_NESTEROV_SOLVER_HPP_
#define CAFFE_SOLVERS_NESTEROV_SOLVER_HPP_

#include "caffe/solvers/sgd_solver.hpp"

namespace caffe {

class NesterovSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "Nesterov"; }

 protected:
  void ComputeUpdateValue(int param_id, float rate) override;
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_NESTEROV_SOLVER_HPP_
