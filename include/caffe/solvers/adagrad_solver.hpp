// AdaGrad: each coordinate's rate shrinks with its accumulated squared gradient.
#ifndef CAFFE_SOLVERS_ADAGRAD_SOLVER_HPP_
#define CAFFE_SOLVERS_ADAGRAD_SOLVER_HPP_

#include "caffe/solvers/sgd_solver.hpp"

namespace caffe {

class AdaGradSolver : public SGDSolver {
 public:
  AdaGradSolver(const SolverParameter& param, shared_ptr<Context> context,
                const string& source = "");
  const char* type() const override { return "AdaGrad"; }

 protected:
  void ComputeUpdateValue(int param_id, float rate) override;
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_ADAGRAD_SOLVER_HPP_
