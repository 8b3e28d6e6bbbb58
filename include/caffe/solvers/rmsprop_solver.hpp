// RMSProp: the rate is divided by a running root-mean-square of recent gradients.
#ifndef CAFFE_SOLVERS_RMSPROP_SOLVER_HPP_
#define CAFFE_SOLVERS_RMSPROP_SOLVER_HPP_

#include "caffe/solvers/sgd_solver.hpp"

namespace caffe {

class RMSPropSolver : public SGDSolver {
 public:
  RMSPropSolver(const SolverParameter& param, shared_ptr<Context> context,
                const string& source = "");
  const char* type() const override { return "RMSProp"; }

 protected:
  void ComputeUpdateValue(int param_id, float rate) override;
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_RMSPROP_SOLVER_HPP_
