// LocalCommunicator (one rank), the stats totals, and how the factory reads the
// launcher's environment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/local_communicator.hpp"

namespace caffe {
namespace {

TEST(LocalCommunicatorTest, IsOneRank) {
  LocalCommunicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.local_rank(), 0);
  EXPECT_EQ(comm.local_size(), 1);
  EXPECT_EQ(comm.backend(), "local");
}

TEST(LocalCommunicatorTest, CollectivesAreIdentitiesAndSendNothing) {
  LocalCommunicator comm;
  std::vector<float> data = {1.5f, -2.f, 3.25f};
  comm.AllReduceSum(data.data(), 3);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.f, 3.25f}));
  comm.AllReduceSum(nullptr, 0);

  comm.Broadcast(data.data(), 12, 0);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.f, 3.25f}));

  std::vector<float> gathered(3, 0.f);
  comm.AllGather(data.data(), 3, gathered.data());
  EXPECT_EQ(gathered, data);
  comm.AllGather(gathered.data(), 3, gathered.data());  // in place
  EXPECT_EQ(gathered, data);

  const char bytes[4] = {'a', 'b', 'c', 'd'};
  char bytes_out[4] = {};
  comm.AllGatherBytes(bytes, 4, bytes_out);
  EXPECT_EQ(std::string(bytes_out, 4), "abcd");

  std::vector<float> gathered_v(2, 0.f);
  comm.AllGatherV(data.data(), {2}, gathered_v.data());
  EXPECT_EQ(gathered_v, (std::vector<float>{1.5f, -2.f}));
  comm.AllGatherV(nullptr, {0}, nullptr);

  comm.Barrier();
  EXPECT_TRUE(comm.AnyTrue(true));
  EXPECT_FALSE(comm.AnyTrue(false));

  const CommStats& stats = comm.stats();
  EXPECT_EQ(stats.by_op.at("allreduce").calls, 2);
  EXPECT_EQ(stats.by_op.at("broadcast").calls, 1);
  EXPECT_EQ(stats.by_op.at("allgather").calls, 3);
  EXPECT_EQ(stats.by_op.at("allgatherv").calls, 2);
  EXPECT_EQ(stats.by_op.at("barrier").calls, 1);
  EXPECT_EQ(stats.by_op.at("anytrue").calls, 2);
  EXPECT_EQ(stats.total_bytes_sent(), 0);
}

TEST(LocalCommunicatorTest, RejectsArgumentsNoSingleRankCanMatch) {
  LocalCommunicator comm;
  float value = 0;
  EXPECT_THROW(comm.Broadcast(&value, 4, 1), Error);
  EXPECT_THROW(comm.AllGatherV(&value, {1, 1}, &value), Error);
  EXPECT_THROW(comm.AllGatherV(&value, {-1}, &value), Error);
  EXPECT_THROW(comm.AllReduceSum(&value, -1), Error);
  EXPECT_THROW(comm.AllGather(&value, -1, &value), Error);
}

TEST(CommStatsTest, TotalsSumEveryOperation) {
  CommStats stats;
  EXPECT_EQ(stats.total_bytes_sent(), 0);
  EXPECT_EQ(stats.total_seconds(), 0.0);
  stats.by_op["allreduce"].bytes_sent = 1000;
  stats.by_op["allreduce"].seconds = 0.5;
  stats.by_op["broadcast"].bytes_sent = 24;
  stats.by_op["broadcast"].seconds = 0.25;
  EXPECT_EQ(stats.total_bytes_sent(), 1024);
  EXPECT_DOUBLE_EQ(stats.total_seconds(), 0.75);
  stats.Clear();
  EXPECT_TRUE(stats.by_op.empty());
}

// Sets launcher variables for one test and restores the process environment after.
class LauncherEnvironmentTest : public testing::Test {
 protected:
  const std::vector<std::string> kNames = {
      "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",     "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS",
      "PMIX_RANK",            "SLURM_NTASKS", "SLURM_STEP_ID"};
  void SetUp() override {
    for (const std::string& name : kNames) {
      if (const char* value = std::getenv(name.c_str())) saved_[name] = value;
      unsetenv(name.c_str());
    }
  }
  void TearDown() override {
    for (const std::string& name : kNames) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  std::map<std::string, std::string> saved_;
};

TEST_F(LauncherEnvironmentTest, DetectsSeveralRanks) {
  EXPECT_FALSE(LaunchedAsMultipleRanks());
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EXPECT_FALSE(LaunchedAsMultipleRanks()) << "mpirun -np 1 is one rank";
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_TRUE(LaunchedAsMultipleRanks());
  unsetenv("OMPI_COMM_WORLD_SIZE");
  setenv("PMI_SIZE", "2", 1);
  EXPECT_TRUE(LaunchedAsMultipleRanks());
  unsetenv("PMI_SIZE");
  setenv("PMIX_RANK", "0", 1);
  EXPECT_FALSE(LaunchedAsMultipleRanks());
  setenv("PMIX_RANK", "3", 1);
  EXPECT_TRUE(LaunchedAsMultipleRanks());
  unsetenv("PMIX_RANK");
  setenv("SLURM_NTASKS", "8", 1);
  EXPECT_FALSE(LaunchedAsMultipleRanks()) << "an sbatch script is not a job step";
  setenv("SLURM_STEP_ID", "0", 1);
  EXPECT_TRUE(LaunchedAsMultipleRanks());
  unsetenv("SLURM_NTASKS");
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  EXPECT_TRUE(LaunchedAsMultipleRanks());
}

TEST_F(LauncherEnvironmentTest, FactoryGivesTheLocalCommunicatorWithoutALauncher) {
  std::shared_ptr<Communicator> comm = CreateCommunicator();
  EXPECT_EQ(comm->backend(), "local");
  EXPECT_EQ(comm->size(), 1);
}

}  // namespace
}  // namespace caffe
