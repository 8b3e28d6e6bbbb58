// What a signal (or another controller) asks the training loop to do at the next
// iteration. It lives below the solver because the ranks must agree on it
// (GradientExchange::AgreeOnAction), and the tool that installs the signal handlers
// names it too; neither then needs the solver's header.
#ifndef CAFFE_SYNC_SOLVER_ACTION_HPP_
#define CAFFE_SYNC_SOLVER_ACTION_HPP_

namespace caffe {

enum class SolverAction { NONE, STOP, SNAPSHOT };

}  // namespace caffe

#endif  // CAFFE_SYNC_SOLVER_ACTION_HPP_
