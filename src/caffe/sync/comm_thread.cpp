#include "caffe/sync/comm_thread.hpp"

namespace caffe {

namespace {
// On a worker thread: its CommThread's owner_waiting_ flag; elsewhere null.
thread_local const std::atomic<bool>* current_owner_waiting = nullptr;
}  // namespace

CommThread::CommThread() : thread_([this] { Loop(); }) {}

CommThread::~CommThread() {
  {
    // Work still queued here belongs to a step an error cut short: it would only wait
    // for messages that may never come. What is running is waited for.
    std::unique_lock<std::mutex> lock(mutex_);
    owner_waiting_ = true;
    queue_.clear();
    work_done_.wait(lock, [this] { return !busy_; });
    stopping_ = true;
  }
  work_ready_.notify_one();
  thread_.join();
}

void CommThread::Post(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  work_ready_.notify_one();
}

void CommThread::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  owner_waiting_ = true;
  work_done_.wait(lock, [this] { return queue_.empty() && !busy_; });
  owner_waiting_ = false;
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

bool CommThread::ShouldNap() {
  return current_owner_waiting != nullptr && !current_owner_waiting->load(std::memory_order_relaxed);
}

void CommThread::Loop() {
  current_owner_waiting = &owner_waiting_;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) {
      // What follows a failed collective would only wait for messages that never come.
      if (!error_) error_ = error;
      queue_.clear();
    }
    if (queue_.empty()) work_done_.notify_all();
  }
}

}  // namespace caffe
