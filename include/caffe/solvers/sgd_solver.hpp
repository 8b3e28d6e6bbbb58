// Stochastic gradient descent with momentum, and the shared update pipeline of every
// solver here: clip -> normalize by iter_size -> regularize -> ComputeUpdateValue ->
// weights -= diff. Subclasses override ComputeUpdateValue only.
#ifndef CAFFE_SOLVERS_SGD_SOLVER_HPP_
#define CAFFE_SOLVERS_SGD_SOLVER_HPP_

#include "caffe/solver.hpp"

namespace caffe {

class SGDSolver : public Solver {
 public:
  SGDSolver(const SolverParameter& param, shared_ptr<Context> context,
            const string& source = "");
  const char* type() const override { return "SGD"; }
  const vector<shared_ptr<Blob>>& history() const { return history_; }

 protected:
  void ApplyUpdate() override;
  void RegularizeBeforeExchange() override;
  // Scales all gradients together so their global L2 norm is at most clip_gradients.
  void ClipGradients();
  void Normalize(int param_id);
  void Regularize(int param_id);
  // Turns the gradient in param diff `param_id` into the step to subtract.
  virtual void ComputeUpdateValue(int param_id, float rate);
  // Solvers with two history sets (AdaDelta, Adam) ask for them here.
  virtual int HistorySetsPerParam() const { return 1; }

  void SnapshotSolverState(SolverState* state) override;
  void RestoreSolverState(const SolverState& state) override;

  // history_[k * num_params + i] is set k of learnable param i.
  vector<shared_ptr<Blob>> history_;
  vector<shared_ptr<Blob>> temp_;

 private:
  void AllocateHistory();
};

}  // namespace caffe

#endif  // CAFFE_SOLVERS_SGD_SOLVER_HPP_
