// The deadline on waits for the network (comm_deadline.hpp): its setting refuses
// nonsense, a wait warns once at half the timeout and fails at the timeout with a
// message naming the iteration, the operation, what it was for and the silent ranks,
// hearing from the peer starts the clock again, and 0 turns it off.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "caffe/sync/comm_deadline.hpp"
#include "caffe/util/error.hpp"

namespace caffe {
namespace {

void SleepSeconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Restores the process-wide settings a test changes.
class CommDeadlineTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetCommTimeoutSeconds(kDefaultCommTimeoutSeconds);
    SetCommIteration(-1);
    SetCommPurpose("");
  }
};

TEST_F(CommDeadlineTest, TheSettingRefusesNegativeAndNonFiniteSeconds) {
  EXPECT_EQ(CommTimeoutSeconds(), kDefaultCommTimeoutSeconds);
  EXPECT_THROW(SetCommTimeoutSeconds(-1), Error);
  EXPECT_THROW(SetCommTimeoutSeconds(std::nan("")), Error);
  EXPECT_THROW(SetCommTimeoutSeconds(INFINITY), Error);
  EXPECT_EQ(CommTimeoutSeconds(), kDefaultCommTimeoutSeconds);
  SetCommTimeoutSeconds(0);
  EXPECT_EQ(CommTimeoutSeconds(), 0);
}

TEST_F(CommDeadlineTest, WarnsAtHalfTheTimeoutAndFailsAtItNamingWhatAndWho) {
  SetCommTimeoutSeconds(1.0);
  SetCommIteration(1234);
  SetCommPurpose("the gradient exchange (IWP)");
  CommWaitDeadline deadline("all-reduce");
  EXPECT_FALSE(deadline.Due());
  deadline.Report("2, 3");  // not due: nothing happens
  SleepSeconds(0.6);
  ASSERT_TRUE(deadline.Due());
  EXPECT_NO_THROW(deadline.Report("2, 3"));  // the warning
  EXPECT_FALSE(deadline.Due());              // once: the next thing due is the deadline
  SleepSeconds(0.5);
  ASSERT_TRUE(deadline.Due());
  try {
    deadline.Report("2, 3");
    FAIL() << "no error at the deadline";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("iteration 1234: all-reduce for the gradient exchange (IWP) heard "
                           "nothing for "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(" s (comm_timeout 1 s); ranks not yet heard from: 2, 3"),
              std::string::npos)
        << message;
  }
}

TEST_F(CommDeadlineTest, HearingFromThePeerRestartsTheClock) {
  SetCommTimeoutSeconds(1.0);
  CommWaitDeadline deadline("broadcast");
  SleepSeconds(0.6);
  EXPECT_TRUE(deadline.Due());
  deadline.Restart();
  EXPECT_FALSE(deadline.Due());
  EXPECT_LT(deadline.waited_seconds(), 0.5);
}

TEST_F(CommDeadlineTest, ACollectiveThatCannotNameTheLateRanksSaysSo) {
  SetCommTimeoutSeconds(0.2);
  CommWaitDeadline deadline("any-true");
  SleepSeconds(0.25);
  deadline.Report("");  // the warning
  try {
    deadline.Report("");
    FAIL() << "no error at the deadline";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("start-up: any-true heard nothing"), std::string::npos) << message;
    EXPECT_NE(message.find("does not say which ranks are late"), std::string::npos) << message;
  }
}

TEST_F(CommDeadlineTest, ZeroTurnsItOff) {
  SetCommTimeoutSeconds(0);
  CommWaitDeadline deadline("barrier");
  SleepSeconds(0.05);
  EXPECT_FALSE(deadline.Due());
  EXPECT_NO_THROW(deadline.Report("1"));
}

TEST_F(CommDeadlineTest, AScopedPurposeRestoresThePreviousOne) {
  SetCommPurpose("the gradient exchange (DENSE)");
  {
    ScopedCommPurpose purpose("rank 0's test pass");
    EXPECT_EQ(CommPurpose(), "rank 0's test pass");
  }
  EXPECT_EQ(CommPurpose(), "the gradient exchange (DENSE)");
}

}  // namespace
}  // namespace caffe
