// CommThread: work runs in the order posted, on another thread, Drain waits for all of
// it and hands back the first error, and a worker naps only while its owner is busy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "caffe/sync/comm_thread.hpp"
#include "caffe/util/error.hpp"

namespace caffe {
namespace {

TEST(CommThreadTest, RunsInOrderOnAnotherThreadAndDrainWaitsForAll) {
  CommThread thread;
  std::vector<int> order;
  std::atomic<int> done{0};
  std::thread::id worker;
  for (int i = 0; i < 50; ++i) {
    thread.Post([&, i] {
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      worker = std::this_thread::get_id();
      order.push_back(i);
      ++done;
    });
  }
  thread.Drain();
  EXPECT_EQ(done.load(), 50);
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  EXPECT_NE(worker, std::this_thread::get_id());
  thread.Drain();  // nothing queued: returns at once
}

TEST(CommThreadTest, TheFirstErrorReachesDrainAndTheRestIsDropped) {
  CommThread thread;
  std::atomic<int> ran{0};
  thread.Post([&] { ++ran; });
  thread.Post([] { ErrorBuilder() << "the link is down"; });
  thread.Post([&] { ++ran; });
  try {
    thread.Drain();
    FAIL() << "Drain did not rethrow";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the link is down"), std::string::npos);
  }
  EXPECT_EQ(ran.load(), 1);
  // The thread goes on working after an error has been handed over.
  thread.Post([&] { ++ran; });
  thread.Drain();
  EXPECT_EQ(ran.load(), 2);
}

TEST(CommThreadTest, AWorkerNapsWhileItsOwnerComputesAndNotWhileItWaits) {
  EXPECT_FALSE(CommThread::ShouldNap()) << "the owner's own thread never naps";
  CommThread thread;
  std::atomic<bool> release{false}, napped_while_busy{false};
  thread.Post([&] {
    napped_while_busy = CommThread::ShouldNap();
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  release = true;
  thread.Drain();
  EXPECT_TRUE(napped_while_busy.load());
  // Once the owner waits in Drain, the worker stops napping.
  std::atomic<bool> waiting_seen{false};
  thread.Post([&] {
    for (int i = 0; i < 200 && CommThread::ShouldNap(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    waiting_seen = !CommThread::ShouldNap();
  });
  thread.Drain();
  EXPECT_TRUE(waiting_seen.load());
}

}  // namespace
}  // namespace caffe
