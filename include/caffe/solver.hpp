// The training loop: Step(n) runs n iterations of
//   clear diffs -> iter_size x (forward, backward) -> gradient exchange -> ApplyUpdate
// with testing, display and snapshots around it. Subclasses (solvers/) differ only in
// how ApplyUpdate turns a gradient into a weight change.
#ifndef CAFFE_SOLVER_HPP_
#define CAFFE_SOLVER_HPP_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "caffe/net.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/sync/gradient_exchange.hpp"  // IWYU pragma: export
#include "caffe/sync/solver_action.hpp"  // IWYU pragma: export

namespace caffe {

class Solver {
 public:
  // `source` names the solver file in messages. Builds the train and test nets.
  Solver(const SolverParameter& param, shared_ptr<Context> context, const string& source = "");
  // Detaches the backward observer from the net, which may outlive the solver.
  virtual ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Trains to max_iter, resuming from a .solverstate when given.
  void Solve(const string& resume_file = "");
  void Step(int iters);
  // One update from the gradients now in the net's diffs, for loops that compute or
  // edit the gradients themselves (pycaffe's apply_update, BVLC's public ApplyUpdate):
  // the learning rate at iter(), clipping, iter_size normalization, regularization, the
  // solver's rule (momentum, Adam's moments, ...) and weights -= step. No forward or
  // backward, no gradient exchange and no initial-weight broadcast: under mpirun each
  // rank steps on its own diffs. iter() stays as it is, as in BVLC, so the rate policy
  // and Adam's bias correction see the same iteration until Step advances it.
  // Afterwards the diffs hold the step taken (the update rule writes it there), not
  // the gradient. Refused (caffe::Error) when the exchange has taken over momentum
  // (sync_param.momentum_correction), since the update would then lack both momentum
  // and weight decay.
  void ApplyUpdateFromDiffs();
  // Restores iteration, weights, history and the random stream from a .solverstate.
  void Restore(const string& state_file);
  // Writes <prefix>_iter_N.caffemodel (snapshot_format HDF5: .caffemodel.h5) and
  // <prefix>_iter_N.solverstate, which names it (rank 0); returns the model path.
  string Snapshot();
  void TestAll();

  const SolverParameter& param() const { return param_; }
  const shared_ptr<Net>& net() const { return net_; }
  const vector<shared_ptr<Net>>& test_nets() const { return test_nets_; }
  int iter() const { return iter_; }
  float smoothed_loss() const { return smoothed_loss_; }
  // Scores of the last TestAll, by "net#/output" name (e.g. "0/accuracy").
  const std::map<string, float>& last_test_scores() const { return last_test_scores_; }
  // The iteration those scores were taken at; -1 before the first test.
  int last_test_iter() const { return last_test_iter_; }
  // Seconds Step has spent training, test passes (and the waits for them) excluded:
  // the clock of a time-to-accuracy measurement.
  double training_seconds() const { return training_seconds_; }
  // Training stops at the first test pass where the test net's output `output`
  // ("accuracy") is at least `value` (every rank stops at the same iteration).
  void set_stop_at_test_score(const string& output, float value) {
    stop_output_ = output;
    stop_value_ = value;
  }
  Context& context() const { return *context_; }

  // The rate the policy gives at the current iteration, with warm-up applied.
  float GetLearningRate() const;
  // The rate the policy gives at iteration `iter` (GetLearningRate: at iter()).
  float GetLearningRateAt(int iter) const;

  void set_gradient_exchange(shared_ptr<GradientExchange> exchange);
  const shared_ptr<GradientExchange>& gradient_exchange() const { return exchange_; }
  // Polled once per iteration; signals map to actions through it.
  void set_action_function(std::function<SolverAction()> fn) { action_function_ = std::move(fn); }

  virtual const char* type() const = 0;

 protected:
  // Turns the (exchanged) gradients in the diffs into the step, then updates weights.
  virtual void ApplyUpdate() = 0;
  // With momentum_in_exchange_: adds regularization (and iter_size normalization)
  // to the local gradients before the exchange; ApplyUpdate then leaves it out.
  virtual void RegularizeBeforeExchange() {}
  virtual void SnapshotSolverState(SolverState* state) = 0;
  virtual void RestoreSolverState(const SolverState& state) = 0;

  bool is_root() const { return context_->rank() == 0; }
  // True when the gradient exchange applies momentum itself (momentum correction).
  bool momentum_in_exchange_ = false;
  // How many multistep boundaries lie at or before `iter`. Derived from the
  // iteration, so resume needs no separate counter.
  int MultistepIndex(int iter) const;

  SolverParameter param_;
  string source_;
  shared_ptr<Context> context_;
  shared_ptr<Net> net_;
  vector<shared_ptr<Net>> test_nets_;
  int iter_ = 0;

 private:
  void InitTrainNet();
  void InitTestNets();
  void Test(int test_net_id);
  void UpdateSmoothedLoss(float loss, int start_iter, int average_loss);
  void DisplayProgress();
  SolverAction RequestedAction();
  void LogTrainingTime() const;
  // Whether the last test pass reached the -stop_at_test_score target (rank 0).
  bool ReachedStopScore() const;
  // Training on NaN only wastes hours: stop with the iteration and the first layer
  // whose output is not finite.
  [[noreturn]] void ReportNonFiniteLoss(float loss) const;
  string SnapshotFilename(const string& extension) const;
  // <prefix>_iter_N.rank<R>.solverstate for <prefix>_iter_N.solverstate.
  static string RankStateFilename(const string& state_file, int rank);

  // Collective: averages the data statistics (BatchNorm's running sums) over ranks.
  void AverageDataStatistics();

  shared_ptr<GradientExchange> exchange_;
  // The learnable params that receive a gradient (what the exchange combines), and
  // those that are data statistics (averaged at tests and snapshots).
  vector<Blob*> exchanged_params_;
  vector<Blob*> statistic_params_;
  std::function<SolverAction()> action_function_;
  vector<float> losses_;
  float smoothed_loss_ = 0;
  std::map<string, float> last_test_scores_;
  int last_test_iter_ = -1;
  std::chrono::steady_clock::time_point display_start_;
  int display_start_iter_ = 0;
  HostDeviceTransfers display_start_transfers_;
  bool requested_early_exit_ = false;
  double training_seconds_ = 0;
  string stop_output_;
  float stop_value_ = 0;
  // Every rank starts from rank 0's weights: the first Step after an exchange is set
  // broadcasts them (after any Restore or weight loading), whoever drives the solver.
  bool initial_weights_shared_ = false;
};

// Solvers register under their `type` string ("SGD", "Adam", ...).
class SolverRegistry {
 public:
  using Creator = std::function<shared_ptr<Solver>(const SolverParameter&, shared_ptr<Context>,
                                                   const string&)>;
  static void AddCreator(const string& type, Creator creator);
  // Throws caffe::Error listing the known types for an unknown one.
  static shared_ptr<Solver> CreateSolver(const SolverParameter& param,
                                         shared_ptr<Context> context, const string& source = "");
  static vector<string> SolverTypeList();

 private:
  static std::map<string, Creator>& Registry();
};

struct SolverRegisterer {
  SolverRegisterer(const string& type, SolverRegistry::Creator creator) {
    SolverRegistry::AddCreator(type, std::move(creator));
  }
};

#define REGISTER_SOLVER_CLASS(type)                                                         \
  static ::caffe::SolverRegisterer g_solver_registerer_##type(                              \
      #type, [](const ::caffe::SolverParameter& p, std::shared_ptr<::caffe::Context> c,     \
                const std::string& s) -> std::shared_ptr<::caffe::Solver> {                 \
        return std::make_shared<type##Solver>(p, std::move(c), s);                          \
      })

// Checks a solver parameter for values that cannot work (max_iter, base_lr, ...),
// throwing caffe::Error naming the file and field.
void ValidateSolverParameter(const SolverParameter& param, const string& source);

}  // namespace caffe

#endif  // CAFFE_SOLVER_HPP_
