// The deadline on waits for the network: settings, context and the per-wait clock.
#include "caffe/sync/comm_deadline.hpp"

#include <glog/logging.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <sstream>

#include "caffe/util/error.hpp"

namespace caffe {

namespace {

std::atomic<double> timeout_seconds{kDefaultCommTimeoutSeconds};
std::atomic<int64_t> current_iteration{-1};
std::mutex purpose_mutex;
std::string& PurposeText() {
  static std::string text;
  return text;
}

}  // namespace

double CommTimeoutSeconds() { return timeout_seconds.load(); }

void SetCommTimeoutSeconds(double seconds) {
  CAFFE_REQUIRE(std::isfinite(seconds) && seconds >= 0)
      << "comm_timeout must be a number of seconds >= 0 (0 turns the deadline off), found "
      << seconds;
  timeout_seconds = seconds;
}

void SetCommIteration(int64_t iteration) { current_iteration = iteration; }

void SetCommPurpose(const std::string& purpose) {
  std::lock_guard<std::mutex> lock(purpose_mutex);
  PurposeText() = purpose;
}

std::string CommPurpose() {
  std::lock_guard<std::mutex> lock(purpose_mutex);
  return PurposeText();
}

ScopedCommPurpose::ScopedCommPurpose(const std::string& purpose) : previous_(CommPurpose()) {
  SetCommPurpose(purpose);
}

ScopedCommPurpose::~ScopedCommPurpose() { SetCommPurpose(previous_); }

std::string LateRanksOfCollective(int rank, int size) {
  return size == 2 ? std::to_string(1 - rank) : std::string();
}

CommWaitDeadline::CommWaitDeadline(const char* op) : op_(op), timeout_(CommTimeoutSeconds()) {
  Restart();
}

void CommWaitDeadline::Restart() {
  start_ = Clock::now();
  warned_ = false;
  next_due_ = start_ + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout_ / 2));
}

double CommWaitDeadline::waited_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string CommWaitDeadline::Describe() const {
  std::ostringstream text;
  const int64_t iteration = current_iteration.load();
  if (iteration >= 0) {
    text << "iteration " << iteration << ": ";
  } else {
    text << "start-up: ";
  }
  text << op_;
  const std::string purpose = CommPurpose();
  if (!purpose.empty()) text << " for " << purpose;
  return text.str();
}

void CommWaitDeadline::Report(const std::string& silent) {
  if (!Due()) return;
  const std::string who =
      silent.empty() ? "the transport does not say which ranks are late (a collective)"
                     : "ranks not yet heard from: " + silent;
  if (!warned_) {
    warned_ = true;
    next_due_ = start_ + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(timeout_));
    LOG(WARNING) << Describe() << " waiting " << std::lround(waited_seconds()) << " s; "
                 << who << " (the job ends at " << timeout_ << " s, comm_timeout)";
    return;
  }
  ErrorBuilder() << Describe() << " heard nothing for " << std::lround(waited_seconds())
                 << " s (comm_timeout " << timeout_ << " s); " << who
                 << ". A lost link or a hung rank: the job ends; resume it from its last snapshot";
}

}  // namespace caffe
