// Maps SIGINT / SIGHUP / SIGTERM to solver actions. The handlers only set flags; the
// solver polls them once per iteration, so a signal never interrupts a write.
#ifndef CAFFE_TOOLS_SUPPORT_SIGNAL_HANDLER_HPP_
#define CAFFE_TOOLS_SUPPORT_SIGNAL_HANDLER_HPP_

#include <functional>
#include <string>

#include "caffe/sync/solver_action.hpp"

namespace caffe {

// "stop", "snapshot" or "none"; anything else is a caffe::Error naming the flag.
SolverAction ParseSignalEffect(const std::string& flag_name, const std::string& value);

class SignalHandler {
 public:
  // SIGTERM always means stop (which snapshots when snapshot_after_train is set).
  SignalHandler(SolverAction sigint_effect, SolverAction sighup_effect);
  ~SignalHandler();
  SignalHandler(const SignalHandler&) = delete;
  SignalHandler& operator=(const SignalHandler&) = delete;

  std::function<SolverAction()> GetActionFunction();

 private:
  SolverAction CheckForSignals() const;
  SolverAction sigint_effect_;
  SolverAction sighup_effect_;
};

}  // namespace caffe

#endif  // CAFFE_TOOLS_SUPPORT_SIGNAL_HANDLER_HPP_
