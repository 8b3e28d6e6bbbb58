// How long a rank waits for the others before it counts them as lost, and what it says
// meanwhile. A killed rank ends the job at once (the operating system resets its
// sockets), but a lost link, a hung NIC or a peer stuck in swap sends nothing: without
// a deadline every other rank would wait for it for ever.
//
// One process-wide setting for every transport's waits (MPI's polled requests, NCCL's
// polled streams): `caffe train -comm_timeout SECONDS`, caffe.set_comm_timeout() in
// Python; 0 turns it off. The deadline counts from the start of one wait (one message
// of the ring, one collective), and restarts whenever the awaited rank is heard from,
// so a slow link is not a dead one: only silence for the whole timeout is.
//
// At half the timeout a wait logs one warning; at the timeout it throws caffe::Error,
// which `caffe train` and pycaffe turn into one `error:` line and the end of the job
// (MPI_Abort), on every rank that can still run.
#ifndef CAFFE_SYNC_COMM_DEADLINE_HPP_
#define CAFFE_SYNC_COMM_DEADLINE_HPP_

#include <chrono>
#include <cstdint>
#include <string>

namespace caffe {

// 300 s by default: longer than anything a healthy job waits for in one collective
// (a step's exchange over a slow link, a large snapshot written by rank 0 alone; rank
// 0's test pass is covered by its heartbeats, see Communicator::AnyTrueAfterRootWork),
// short enough that a dead job gives its machines back within minutes. PyTorch's
// process groups default to 10 minutes, Horovod warns of a stall after 60 s.
constexpr double kDefaultCommTimeoutSeconds = 300;
double CommTimeoutSeconds();
// Throws caffe::Error for a negative or non-finite value.
void SetCommTimeoutSeconds(double seconds);

// What the job is doing, for the messages: the iteration (the solver sets it at each
// step; before the first it is start-up) and what the collectives are for ("the
// gradient exchange (IWP)", "the initial weights", ...). Process-wide: the exchange's
// comm thread works for the step the main thread named.
void SetCommIteration(int64_t iteration);
void SetCommPurpose(const std::string& purpose);
std::string CommPurpose();
// Names the purpose for a scope and restores the previous one after it.
class ScopedCommPurpose {
 public:
  explicit ScopedCommPurpose(const std::string& purpose);
  ~ScopedCommPurpose();
  ScopedCommPurpose(const ScopedCommPurpose&) = delete;
  ScopedCommPurpose& operator=(const ScopedCommPurpose&) = delete;

 private:
  std::string previous_;
};

// Whom a collective waits for, as far as any transport can tell: with two ranks the
// other one; with more, no one can say ("", which Report words as such).
std::string LateRanksOfCollective(int rank, int size);

// The clock of one wait. Between the transport's polls: `if (deadline.Due())
// deadline.Report(silent)`, which logs one warning at half the timeout and throws
// caffe::Error past it. `silent` says who has not been heard from ("1", "2, 3"), or is
// empty where the transport cannot know (an MPI collective).
class CommWaitDeadline {
 public:
  // `op` names the operation ("all-reduce", "broadcast", ...).
  explicit CommWaitDeadline(const char* op);
  // Cheap (one clock read): whether the warning or the deadline is due.
  bool Due() const { return timeout_ > 0 && Clock::now() >= next_due_; }
  void Report(const std::string& silent);
  // The awaited rank was heard from: the clock starts again.
  void Restart();
  double waited_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string Describe() const;

  const char* op_;
  double timeout_;
  Clock::time_point start_, next_due_;
  bool warned_ = false;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_COMM_DEADLINE_HPP_
