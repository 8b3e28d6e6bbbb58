// A rank's background thread for communication. The gradient exchange posts each
// bucket's collectives to it as soon as backward has produced the bucket's gradients;
// they run there, in the order posted, while the main thread goes on with backward
// (what Horovod's background thread and PyTorch DDP's reducer do). Drain, called once
// backward is done, waits for the rest.
//
// MPI is initialised MPI_THREAD_SERIALIZED: the main thread makes no MPI call between
// the first Post of a step and its Drain, and the hand-over through the queue's mutex
// orders the two threads' calls.
//
// A worker shares its rank's core with the computation (one rank per core is the
// usual set-up), and MPI's own waits spin. So while the owner computes, the
// communicators' waits nap between polls (ShouldNap); once the owner waits in Drain
// they poll without pause, as a blocking wait would.
#ifndef CAFFE_SYNC_COMM_THREAD_HPP_
#define CAFFE_SYNC_COMM_THREAD_HPP_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace caffe {

class CommThread {
 public:
  CommThread();
  // Drops what has not started (a step an error cut short), waits for what runs, then
  // ends the thread.
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Runs `work` on the thread after everything posted before it.
  void Post(std::function<void()> work);
  // Returns once everything posted has run. When a work item threw, the items after it
  // are dropped and the first exception is rethrown here, on the owner's thread.
  void Drain();

  // True on a CommThread's worker while its owner is not waiting for it: a wait for the
  // network should then sleep between polls rather than spin.
  static bool ShouldNap();

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::atomic<bool> owner_waiting_{false};
  std::thread thread_;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_COMM_THREAD_HPP_
