// gtest under mpirun: every rank runs the same tests; only rank 0 prints gtest's
// report, other ranks print their own failures tagged with their rank, and a failure
// on any rank fails rank 0 (and so the ctest run). Include from test_mpi_*.cpp only:
// it registers itself at static initialisation.
#ifndef CAFFE_TESTS_MPI_TEST_SUPPORT_HPP_
#define CAFFE_TESTS_MPI_TEST_SUPPORT_HPP_

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "caffe/sync/mpi_communicator.hpp"

namespace caffe {
namespace mpi_test {

inline std::shared_ptr<MpiCommunicator> g_comm;

// ---- gtest under MPI ----

// Before MPI starts (static initialisation) only the launcher's environment knows
// the rank.
inline int RankFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

// ---- checks across ranks ----

// Rank 0's copy of `data` equals this rank's, bit for bit, on every rank.
inline bool SameOnAllRanks(const float* data, int64_t n) {
  std::vector<float> root(data, data + n);
  g_comm->Broadcast(root.data(), n * 4, 0);
  const bool same = std::memcmp(root.data(), data, n * 4) == 0;
  return !g_comm->AnyTrue(!same);
}

// The sum over ranks in double precision, through MPI directly: the property under
// test must not be blurred by float rounding of the check itself.
inline std::vector<double> SumOverRanks(const std::vector<double>& local) {
  std::vector<double> out(local.size());
  MPI_Allreduce(local.data(), out.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  return out;
}

// What non-zero ranks print instead of gtest's report: their failures, tagged.
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestStart(const testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: Failure\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};

class MpiTestEnvironment : public testing::Environment {
 public:
  void SetUp() override { g_comm = std::make_shared<MpiCommunicator>(); }
  // Runs after every test: whether any rank failed is shared here, so rank 0's exit
  // status and report cover all ranks.
  void TearDown() override {
    int failed = testing::UnitTest::GetInstance()->Failed() ? 1 : 0;
    std::vector<int> failed_by_rank(g_comm->size());
    MPI_Allgather(&failed, 1, MPI_INT, failed_by_rank.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::string failed_ranks;
    for (int r = 0; r < g_comm->size(); ++r) {
      if (failed_by_rank[r] && r != g_comm->rank()) failed_ranks += " " + std::to_string(r);
    }
    if (!failed_ranks.empty()) ADD_FAILURE() << "tests failed on rank(s)" << failed_ranks;
    g_comm.reset();
  }
};

inline const bool kMpiTestSetup = [] {
  testing::AddGlobalTestEnvironment(new MpiTestEnvironment);
  const int rank = RankFromEnvironment();
  if (rank > 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  return true;
}();

}  // namespace mpi_test
}  // namespace caffe

#endif  // CAFFE_TESTS_MPI_TEST_SUPPORT_HPP_
