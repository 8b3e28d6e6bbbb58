#include "support/signal_handler.hpp"

#include <csignal>

#include <atomic>

#include <glog/logging.h>

#include "caffe/util/error.hpp"

namespace caffe {

namespace {
std::atomic<bool> g_got_sigint{false};
std::atomic<bool> g_got_sighup{false};
std::atomic<bool> g_got_sigterm{false};
bool g_installed = false;
struct sigaction g_old_int, g_old_hup, g_old_term;

void HandleSignal(int signal) {
  switch (signal) {
    case SIGINT: g_got_sigint = true; break;
    case SIGHUP: g_got_sighup = true; break;
    case SIGTERM: g_got_sigterm = true; break;
    default: break;
  }
}
}  // namespace

SolverAction ParseSignalEffect(const std::string& flag_name, const std::string& value) {
  if (value == "stop") return SolverAction::STOP;
  if (value == "snapshot") return SolverAction::SNAPSHOT;
  if (value == "none") return SolverAction::NONE;
  ErrorBuilder() << "-" << flag_name << ": expected stop, snapshot or none, found '" << value
                 << "'";
}

SignalHandler::SignalHandler(SolverAction sigint_effect, SolverAction sighup_effect)
    : sigint_effect_(sigint_effect), sighup_effect_(sighup_effect) {
  CHECK(!g_installed) << "only one SignalHandler at a time";
  struct sigaction action = {};
  action.sa_handler = &HandleSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGHUP, &action, &g_old_hup);
  sigaction(SIGTERM, &action, &g_old_term);
  g_installed = true;
}

SignalHandler::~SignalHandler() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_installed = false;
}

SolverAction SignalHandler::CheckForSignals() const {
  if (g_got_sigterm.exchange(false)) return SolverAction::STOP;
  if (g_got_sigint.exchange(false)) return sigint_effect_;
  if (g_got_sighup.exchange(false)) return sighup_effect_;
  return SolverAction::NONE;
}

std::function<SolverAction()> SignalHandler::GetActionFunction() {
  return [this] { return CheckForSignals(); };
}

}  // namespace caffe
