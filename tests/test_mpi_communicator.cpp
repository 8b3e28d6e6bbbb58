// MpiCommunicator under mpirun -np 2 and -np 4 (ctest runs both). Every rank runs
// every test; only rank 0 prints gtest's report, other ranks print their failures
// only, and a failure on any rank fails rank 0 too (see MpiTestEnvironment).
//
// Tests keep every collective call unconditional and check with EXPECT_* after it, so
// a failing rank never leaves the others waiting in a collective.
//
// Counts past INT_MAX (a >2^31-element all-reduce needs 8+ GB per rank) are covered
// by lowering max_count_per_call to a few elements: the same splitting code runs on
// small buffers. A real all-reduce past 2^31 bytes runs at np 2 where memory allows.
#ifdef USE_MPI

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/mpi_communicator.hpp"
#include "caffe/sync/transport.hpp"
#include "mpi_test_support.hpp"
#ifdef USE_NCCL
#include "caffe/sync/nccl_communicator.hpp"
#include "caffe/util/device_alternate.hpp"
#endif

namespace caffe {
namespace {

using mpi_test::g_comm;


// ---- helpers (plain MPI on MPI_COMM_WORLD, independent of the code under test) ----

template <typename T>
std::vector<T> GatherFromAll(const std::vector<T>& mine) {
  const int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<T> all(mine.size() * g_comm->size());
  MPI_Allgather(mine.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, MPI_COMM_WORLD);
  return all;
}

int64_t SumOverRanks(int64_t value) {
  int64_t sum = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

// Rank r's contribution: integers small enough that every partial sum is exact in
// float, so any summation order gives the same exact result.
float IntegerValue(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (i % 97) + rank - 3 * (i % 5));
}

std::vector<float> RandomValues(int rank, int64_t count) {
  std::mt19937 rng(1234 + rank);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(rng);
  return values;
}

// Elements rank `rank` sends in the ring: the test's own statement of the rule (N
// chunks, the first count mod N one longer; each phase skips one chunk: rank+1 in
// reduce-scatter, rank+2 in all-gather).
int64_t ExpectedRingElements(int64_t count, int n, int rank) {
  if (n == 1) return 0;
  auto length = [&](int chunk) { return count / n + (chunk < count % n ? 1 : 0); };
  return 2 * count - length((rank + 1) % n) - length((rank + 2) % n);
}

const char* AlgorithmName(MpiCommunicator::AllReduceAlgorithm algorithm) {
  return algorithm == MpiCommunicator::RING_P2P ? "RingP2P" : "MpiNative";
}

class MpiCommunicatorTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_comm);
    comm_ = g_comm.get();
    comm_->mutable_stats().Clear();
    comm_->set_max_count_per_call(INT_MAX);
    default_algorithm_ = comm_->allreduce_algorithm();
    n_ = comm_->size();
    rank_ = comm_->rank();
  }
  void TearDown() override { comm_->set_allreduce_algorithm(default_algorithm_); }

  const CommStats::Entry& Stat(const char* op) { return comm_->mutable_stats().by_op[op]; }

  MpiCommunicator* comm_ = nullptr;
  MpiCommunicator::AllReduceAlgorithm default_algorithm_ = MpiCommunicator::MPI_NATIVE;
  int n_ = 1;
  int rank_ = 0;
};

// ---- ranks ----

TEST_F(MpiCommunicatorTest, RanksAreDistinctAndMatchTheLauncher) {
  EXPECT_EQ(comm_->backend(), "mpi");
  EXPECT_GE(n_, 2);
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    EXPECT_EQ(n_, std::atoi(size));
  }
  const std::vector<int> ranks = GatherFromAll(std::vector<int>{rank_});
  for (int r = 0; r < n_; ++r) EXPECT_EQ(ranks[r], r);
  // One machine here: local and global numbering agree.
  EXPECT_GE(comm_->local_size(), 1);
  EXPECT_LT(comm_->local_rank(), comm_->local_size());
  const std::vector<int> local = GatherFromAll(std::vector<int>{comm_->local_rank()});
  int local_rank_zero_count = 0;
  for (int r : local) local_rank_zero_count += r == 0;
  EXPECT_EQ(local_rank_zero_count * comm_->local_size(), n_)
      << "every machine has one local rank 0";
}

// MPI takes host buffers and has no asynchronous collectives: the interface's
// AllReduceSumAsync sums before it returns, counted like AllReduceSum.
TEST_F(MpiCommunicatorTest, AsyncSumOnHostBuffersIsDoneOnReturn) {
  EXPECT_EQ(comm_->memory(), BufferMemory::HOST);
  const int64_t count = 1001;
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = IntegerValue(rank_, i);
  comm_->AllReduceSumAsync(data.data(), count, nullptr);
  comm_->Wait(nullptr, "allreduce (test)");
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < n_; ++r) expected += IntegerValue(r, i);
    wrong += data[i] != expected;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(Stat("allreduce").bytes_sent, ExpectedRingElements(count, n_, rank_) * 4);
}

// Every rank gets the same answer, and the question is collective: one rank in CPU
// mode keeps them all off the device communicator, without a hang.
TEST_F(MpiCommunicatorTest, TransportAgreesOnADeviceCommunicator) {
  EXPECT_EQ(CreateTransport(g_comm, false).device, nullptr);
  Transport mixed = CreateTransport(g_comm, rank_ == 0);
  EXPECT_EQ(mixed.host, g_comm);
  EXPECT_EQ(mixed.device, nullptr);
#ifdef USE_NCCL
  if (!comm_->AnyTrue(CudaDeviceCount() == 0)) {
    CUDA_CHECK(cudaSetDevice(comm_->local_rank() % CudaDeviceCount()));
    const bool shared = comm_->AnyTrue(comm_->local_size() > CudaDeviceCount());
    Transport gpu = CreateTransport(g_comm, true);
    ASSERT_EQ(gpu.device != nullptr, !shared);
    if (gpu.device) {
      EXPECT_EQ(gpu.device->memory(), BufferMemory::DEVICE);
      EXPECT_EQ(gpu.device->rank(), rank_);
    }
  }
#endif
}

TEST_F(MpiCommunicatorTest, FactoryPicksMpiUnderMpirun) {
  EXPECT_TRUE(LaunchedAsMultipleRanks());
  std::shared_ptr<Communicator> created = CreateCommunicator();
  EXPECT_EQ(created->backend(), "mpi");
  EXPECT_EQ(created->size(), n_);
  EXPECT_EQ(created->rank(), rank_);
}

// ---- all-reduce ----

class AllReduceTest
    : public MpiCommunicatorTest,
      public testing::WithParamInterface<std::tuple<MpiCommunicator::AllReduceAlgorithm, int>> {
 protected:
  // Size -1 stands for N-1, which is only known at run time.
  int64_t Count() const {
    const int size = std::get<1>(GetParam());
    return size < 0 ? n_ - 1 : size;
  }
};

TEST_P(AllReduceTest, SumsExactlyAndCountsRingBytes) {
  comm_->set_allreduce_algorithm(std::get<0>(GetParam()));
  const int64_t count = Count();
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = IntegerValue(rank_, i);
  comm_->AllReduceSum(data.data(), count);

  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < n_; ++r) expected += IntegerValue(r, i);
    if (data[i] != expected && wrong++ < 5) {
      ADD_FAILURE() << "element " << i << ": " << data[i] << " != " << expected;
    }
  }
  EXPECT_EQ(wrong, 0);

  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  const CommStats::Entry& stat = Stat("allreduce");
  EXPECT_EQ(stat.calls, 1);
  EXPECT_EQ(stat.bytes_sent, ExpectedRingElements(count, n_, rank_) * 4);
  EXPECT_EQ(stat.bytes_sent, MpiCommunicator::RingAllReduceBytesSent(count, n_, rank_));
  // Within rounding of the nominal 2 (N-1)/N share, and exact summed over ranks.
  EXPECT_NEAR(static_cast<double>(stat.bytes_sent), 2.0 * (n_ - 1) / n_ * bytes, 8.0);
  EXPECT_EQ(SumOverRanks(stat.bytes_sent), 2 * (n_ - 1) * bytes);
  EXPECT_GE(stat.seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, AllReduceTest,
    testing::Combine(testing::Values(MpiCommunicator::RING_P2P, MpiCommunicator::MPI_NATIVE),
                     testing::Values(0, 1, 7, -1, 1000003)),
    [](const testing::TestParamInfo<AllReduceTest::ParamType>& info) {
      const int size = std::get<1>(info.param);
      return std::string(AlgorithmName(std::get<0>(info.param))) + "_" +
             (size < 0 ? std::string("NMinus1") : std::to_string(size));
    });

class AllReduceAlgorithmTest
    : public MpiCommunicatorTest,
      public testing::WithParamInterface<MpiCommunicator::AllReduceAlgorithm> {};

// Non-integer values round differently in each summation order; every rank must still
// end with the same bits, close to the exact sum.
TEST_P(AllReduceAlgorithmTest, AllRanksGetIdenticalBits) {
  comm_->set_allreduce_algorithm(GetParam());
  const int64_t count = 4099;
  std::vector<float> data = RandomValues(rank_, count);
  comm_->AllReduceSum(data.data(), count);
  const std::vector<float> all = GatherFromAll(data);
  std::vector<double> exact(count, 0.0);
  for (int r = 0; r < n_; ++r) {
    const std::vector<float> contribution = RandomValues(r, count);
    for (int64_t i = 0; i < count; ++i) exact[i] += contribution[i];
  }
  for (int r = 0; r < n_; ++r) {
    EXPECT_EQ(std::memcmp(all.data() + r * count, data.data(), count * sizeof(float)), 0)
        << "rank " << r << " differs from rank " << rank_;
  }
  for (int64_t i = 0; i < count; ++i) ASSERT_NEAR(data[i], exact[i], 1e-5) << i;
}

// The splitting for counts past INT_MAX, exercised with a tiny per-call limit: same
// sums, same bytes as one unsplit call, and for the ring the same bits as well.
TEST_P(AllReduceAlgorithmTest, SplitsCallsAboveTheCountLimit) {
  comm_->set_allreduce_algorithm(GetParam());
  struct Case {
    int64_t count, limit;
  };
  for (const Case& c : {Case{1003, 7}, Case{13, 1}, Case{10, 3}, Case{5, 2}}) {
    SCOPED_TRACE("count " + std::to_string(c.count) + ", limit " + std::to_string(c.limit));
    std::vector<float> exact(c.count), split(c.count);
    for (int64_t i = 0; i < c.count; ++i) exact[i] = split[i] = IntegerValue(rank_, i);
    std::vector<float> random_whole = RandomValues(rank_, c.count);
    std::vector<float> random_split = random_whole;

    comm_->mutable_stats().Clear();
    comm_->set_max_count_per_call(c.limit);
    comm_->AllReduceSum(split.data(), c.count);
    comm_->AllReduceSum(random_split.data(), c.count);
    const int64_t split_bytes = Stat("allreduce").bytes_sent;
    comm_->set_max_count_per_call(INT_MAX);
    comm_->AllReduceSum(exact.data(), c.count);
    comm_->AllReduceSum(random_whole.data(), c.count);

    EXPECT_EQ(split, exact);
    EXPECT_EQ(split_bytes, 2 * ExpectedRingElements(c.count, n_, rank_) * 4);
    if (GetParam() == MpiCommunicator::RING_P2P) {
      EXPECT_EQ(random_split, random_whole);
    }
  }
}

// Bytes the kernel says could be given to new allocations on this machine, or 0.
int64_t MemAvailableBytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  int64_t kib = 0;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::sscanf(line, "MemAvailable: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

// A real all-reduce past 2^31 bytes (byte offsets that overflow a 32-bit int), where
// the machine has the memory: 2 ranks x (2 GiB buffer + the ring's 1 GiB of chunk
// buffers). The splitting test above covers counts past INT_MAX on small buffers.
TEST_P(AllReduceAlgorithmTest, SumsMoreThanTwoGibibytes) {
  const int64_t count = (int64_t{1} << 29) + 3;  // 2^31 + 12 bytes
  const int64_t needed = comm_->local_size() * (3 * count * int64_t{sizeof(float)}) +
                         (int64_t{2} << 30);
  const bool too_big = n_ != 2 || MemAvailableBytes() < needed;
  if (comm_->AnyTrue(too_big)) {
    GTEST_SKIP() << "runs at np 2 only, with " << (needed >> 20)
                 << " MiB available on each machine";
  }
  comm_->set_allreduce_algorithm(GetParam());
  std::vector<float> data(count);
  // Small integers sum exactly in any order; the index pattern catches misplaced chunks.
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>((i % 1000) + rank_);
  comm_->mutable_stats().Clear();
  comm_->AllReduceSum(data.data(), count);
  EXPECT_EQ(Stat("allreduce").bytes_sent, ExpectedRingElements(count, n_, rank_) * 4);
  int64_t wrong = 0, first_wrong = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (data[i] != static_cast<float>(2 * (i % 1000) + 1)) {
      if (first_wrong < 0) first_wrong = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << "first wrong element " << first_wrong;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllReduceAlgorithmTest,
                         testing::Values(MpiCommunicator::RING_P2P,
                                         MpiCommunicator::MPI_NATIVE),
                         [](const testing::TestParamInfo<MpiCommunicator::AllReduceAlgorithm>&
                                info) { return std::string(AlgorithmName(info.param)); });

// ---- broadcast ----

unsigned char Pattern(int root, int64_t i) { return static_cast<unsigned char>(root * 31 + i * 7); }

TEST_F(MpiCommunicatorTest, BroadcastFromEveryRoot) {
  const int64_t bytes = 1001;
  for (int64_t limit : {int64_t{INT_MAX}, int64_t{100}}) {
    comm_->set_max_count_per_call(limit);
    for (int root = 0; root < n_; ++root) {
      SCOPED_TRACE("root " + std::to_string(root) + ", limit " + std::to_string(limit));
      comm_->mutable_stats().Clear();
      std::vector<unsigned char> buffer(bytes, 0xEE);
      if (rank_ == root) {
        for (int64_t i = 0; i < bytes; ++i) buffer[i] = Pattern(root, i);
      }
      comm_->Broadcast(buffer.data(), bytes, root);
      int64_t wrong = 0;
      for (int64_t i = 0; i < bytes; ++i) wrong += buffer[i] != Pattern(root, i);
      EXPECT_EQ(wrong, 0);
      // Chain convention: all but rank root-1 (mod N) forward the buffer.
      const bool last_in_chain = rank_ == (root + n_ - 1) % n_;
      EXPECT_EQ(Stat("broadcast").bytes_sent, last_in_chain ? 0 : bytes);
      EXPECT_EQ(SumOverRanks(Stat("broadcast").bytes_sent), (n_ - 1) * bytes);
    }
  }
  comm_->Broadcast(nullptr, 0, n_ - 1);
}

// ---- gathers ----

TEST_F(MpiCommunicatorTest, AllGatherPlacesBlocksInRankOrder) {
  const int64_t count = 5;
  for (int64_t limit : {int64_t{INT_MAX}, int64_t{2}, int64_t{1}}) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    comm_->set_max_count_per_call(limit);
    comm_->mutable_stats().Clear();
    std::vector<float> in(count);
    for (int64_t i = 0; i < count; ++i) in[i] = rank_ * 1000.f + i;
    std::vector<float> out(n_ * count, -1.f);
    comm_->AllGather(in.data(), count, out.data());
    // In place: this rank's block already sits in the output.
    std::vector<float> in_place(n_ * count, -1.f);
    std::copy(in.begin(), in.end(), in_place.begin() + rank_ * count);
    comm_->AllGather(in_place.data() + rank_ * count, count, in_place.data());
    for (int r = 0; r < n_; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(out[r * count + i], r * 1000.f + i) << r << "," << i;
        EXPECT_EQ(in_place[r * count + i], r * 1000.f + i) << r << "," << i;
      }
    }
    EXPECT_EQ(Stat("allgather").calls, 2);
    EXPECT_EQ(Stat("allgather").bytes_sent, 2 * (n_ - 1) * count * 4);
  }
}

TEST_F(MpiCommunicatorTest, AllGatherBytesAndEmptyBlocks) {
  for (int64_t limit : {int64_t{INT_MAX}, int64_t{2}}) {
    comm_->set_max_count_per_call(limit);
    comm_->mutable_stats().Clear();
    const unsigned char mine[3] = {static_cast<unsigned char>(rank_), 7,
                                   static_cast<unsigned char>(200 + rank_)};
    std::vector<unsigned char> out(3 * n_, 0);
    comm_->AllGatherBytes(mine, 3, out.data());
    for (int r = 0; r < n_; ++r) {
      EXPECT_EQ(out[3 * r], r);
      EXPECT_EQ(out[3 * r + 1], 7);
      EXPECT_EQ(out[3 * r + 2], 200 + r);
    }
    EXPECT_EQ(Stat("allgather").bytes_sent, (n_ - 1) * 3);
    comm_->AllGather(nullptr, 0, nullptr);
    EXPECT_EQ(Stat("allgather").calls, 2);
    EXPECT_EQ(Stat("allgather").bytes_sent, (n_ - 1) * 3);
  }
}

TEST_F(MpiCommunicatorTest, AllGatherVWithUnequalAndZeroCounts) {
  // Rank 1 contributes nothing; the others 2r+3 values. Then everyone nothing.
  std::vector<int64_t> counts(n_);
  for (int r = 0; r < n_; ++r) counts[r] = r == 1 ? 0 : 2 * r + 3;
  const std::vector<int64_t> no_counts(n_, 0);
  for (int64_t limit : {int64_t{INT_MAX}, int64_t{4}, int64_t{1}}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE("limit " + std::to_string(limit) + (in_place ? ", in place" : ""));
      comm_->set_max_count_per_call(limit);
      comm_->mutable_stats().Clear();
      int64_t total = 0, my_offset = 0;
      for (int r = 0; r < n_; ++r) {
        if (r == rank_) my_offset = total;
        total += counts[r];
      }
      std::vector<float> in(counts[rank_]);
      for (int64_t i = 0; i < counts[rank_]; ++i) in[i] = rank_ * 100.f + i;
      std::vector<float> out(total, -1.f);
      const float* source = in.data();
      if (in_place) {
        std::copy(in.begin(), in.end(), out.begin() + my_offset);
        source = out.data() + my_offset;
      }
      comm_->AllGatherV(source, counts, out.data());
      int64_t at = 0;
      for (int r = 0; r < n_; ++r) {
        for (int64_t i = 0; i < counts[r]; ++i, ++at) {
          EXPECT_EQ(out[at], r * 100.f + i) << "rank " << r << " element " << i;
        }
      }
      comm_->AllGatherV(nullptr, no_counts, nullptr);
      EXPECT_EQ(Stat("allgatherv").calls, 2);
      EXPECT_EQ(Stat("allgatherv").bytes_sent, (n_ - 1) * counts[rank_] * 4);
    }
  }
}

// ---- control ----

TEST_F(MpiCommunicatorTest, AnyTrueIsALogicalOr) {
  EXPECT_FALSE(comm_->AnyTrue(false));
  EXPECT_TRUE(comm_->AnyTrue(true));
  EXPECT_TRUE(comm_->AnyTrue(rank_ == n_ - 1));
  EXPECT_TRUE(comm_->AnyTrue(rank_ == 0));
  EXPECT_EQ(Stat("anytrue").calls, 4);
  EXPECT_EQ(Stat("anytrue").bytes_sent, 0);
}

TEST_F(MpiCommunicatorTest, BarrierAndStatTotals) {
  comm_->Barrier();
  std::vector<float> data(100, 1.f);
  comm_->AllReduceSum(data.data(), 100);
  EXPECT_EQ(Stat("barrier").calls, 1);
  EXPECT_EQ(Stat("barrier").bytes_sent, 0);
  const CommStats& stats = comm_->stats();
  EXPECT_EQ(stats.total_bytes_sent(), stats.by_op.at("allreduce").bytes_sent);
  EXPECT_DOUBLE_EQ(stats.total_seconds(),
                   stats.by_op.at("allreduce").seconds + stats.by_op.at("barrier").seconds);
  EXPECT_GT(stats.total_seconds(), 0.0);
}

// ---- errors ----

// Bad arguments are caught before any message is exchanged, identically on every
// rank, so all ranks throw and none is left waiting.
TEST_F(MpiCommunicatorTest, BadArgumentsThrowOnEveryRank) {
  float value = 0;
  EXPECT_THROW(comm_->AllReduceSum(&value, -1), Error);
  EXPECT_THROW(comm_->Broadcast(&value, 4, n_), Error);
  EXPECT_THROW(comm_->Broadcast(&value, 4, -1), Error);
  EXPECT_THROW(comm_->AllGather(&value, -2, &value), Error);
  EXPECT_THROW(comm_->AllGatherV(&value, std::vector<int64_t>(n_ + 1, 1), &value), Error);
  std::vector<int64_t> negative(n_, 1);
  negative.back() = -1;
  EXPECT_THROW(comm_->AllGatherV(&value, negative, &value), Error);
  EXPECT_THROW(comm_->set_max_count_per_call(0), Error);
  EXPECT_THROW(comm_->set_max_count_per_call(int64_t{INT_MAX} + 1), Error);
  try {
    comm_->Broadcast(&value, 4, n_);
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("root"), std::string::npos) << error.what();
  }
  comm_->Barrier();  // still usable
}

TEST_F(MpiCommunicatorTest, MpiErrorsBecomeCaffeErrors) {
  // The communicator's own MPI_Comm returns errors instead of aborting the job.
  const int status = MPI_Send(&rank_, 1, MPI_INT, n_ + 5, 0, comm_->mpi_comm());
  EXPECT_NE(status, MPI_SUCCESS);
  try {
    ThrowIfMpiError(status, "MPI_Send");
    ADD_FAILURE() << "no exception";
  } catch (const Error& error) {
    char mpi_message[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, mpi_message, &length);
    const std::string what = error.what();
    EXPECT_NE(what.find("MPI_Send"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(mpi_message, length)), std::string::npos) << what;
  }
  EXPECT_NO_THROW(ThrowIfMpiError(MPI_SUCCESS, "nothing"));
}


// ---- NCCL (CUDA builds, one GPU per rank on each machine; skipped elsewhere) ----
#ifdef USE_NCCL

// A device copy of a host vector, freed with the object.
struct DeviceFloats {
  explicit DeviceFloats(const std::vector<float>& host) : count(host.size()) {
    CUDA_CHECK(cudaMalloc(&data, std::max<size_t>(count, 1) * sizeof(float)));
    if (count > 0) {
      CUDA_CHECK(cudaMemcpy(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  ~DeviceFloats() { cudaFree(data); }
  std::vector<float> ToHost() const {
    std::vector<float> host(count);
    if (count > 0) {
      CUDA_CHECK(cudaMemcpy(host.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost));
    }
    return host;
  }
  float* data = nullptr;
  size_t count;
};

TEST_F(MpiCommunicatorTest, NcclCollectivesOnDeviceBuffers) {
  // Every rank must agree to skip: NCCL needs a GPU of its own per rank.
  const bool lacks_gpu = CudaDeviceCount() < comm_->local_size();
  if (comm_->AnyTrue(lacks_gpu)) GTEST_SKIP() << "needs one GPU per rank on each machine";
  NcclCommunicator nccl;
  EXPECT_EQ(nccl.backend(), "nccl");
  EXPECT_EQ(nccl.memory(), BufferMemory::DEVICE);
  EXPECT_EQ(nccl.rank(), rank_);
  EXPECT_EQ(nccl.size(), n_);

  const int64_t count = 1000003;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = IntegerValue(rank_, i);
  DeviceFloats sum(values);
  nccl.AllReduceSum(sum.data, count);
  const std::vector<float> reduced = sum.ToHost();
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < n_; ++r) expected += IntegerValue(r, i);
    wrong += reduced[i] != expected;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(nccl.stats().by_op.at("allreduce").bytes_sent,
            ExpectedRingElements(count, n_, rank_) * 4);
  // The asynchronous sum, on a stream of the caller's, gives the same bits.
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceFloats async_sum(values);
  nccl.AllReduceSumAsync(async_sum.data, count, stream);
  nccl.Wait(stream, "allreduce (async test)");
  EXPECT_EQ(async_sum.ToHost(), reduced);
  CUDA_CHECK(cudaStreamDestroy(stream));

  const int root = n_ - 1;
  DeviceFloats broadcast(std::vector<float>(5, rank_ == root ? 42.f : -1.f));
  nccl.Broadcast(broadcast.data, 5 * sizeof(float), root);
  EXPECT_EQ(broadcast.ToHost(), std::vector<float>(5, 42.f));

  DeviceFloats block(std::vector<float>{rank_ * 10.f, rank_ * 10.f + 1});
  DeviceFloats gathered(std::vector<float>(2 * n_, -1.f));
  nccl.AllGather(block.data, 2, gathered.data);
  std::vector<float> expected_gather;
  for (int r = 0; r < n_; ++r) expected_gather.insert(expected_gather.end(), {r * 10.f, r * 10.f + 1});
  EXPECT_EQ(gathered.ToHost(), expected_gather);

  std::vector<int64_t> counts(n_);
  std::vector<float> expected_v;
  for (int r = 0; r < n_; ++r) {
    counts[r] = r == 1 ? 0 : r + 2;
    for (int64_t i = 0; i < counts[r]; ++i) expected_v.push_back(r * 100.f + i);
  }
  std::vector<float> mine(counts[rank_]);
  for (int64_t i = 0; i < counts[rank_]; ++i) mine[i] = rank_ * 100.f + i;
  DeviceFloats mine_device(mine), gathered_v(std::vector<float>(expected_v.size(), -1.f));
  nccl.AllGatherV(mine_device.data, counts, gathered_v.data);
  EXPECT_EQ(gathered_v.ToHost(), expected_v);
  EXPECT_EQ(nccl.stats().by_op.at("allgatherv").bytes_sent, (n_ - 1) * counts[rank_] * 4);

  EXPECT_TRUE(nccl.AnyTrue(rank_ == 0));
  EXPECT_FALSE(nccl.AnyTrue(false));
  nccl.Barrier();
}

// The exchanges take NCCL only where every rank has a GPU of its own (NCCL refuses
// two ranks on one device); ranks placed as -gpu all places them (local rank mod the
// GPUs on the machine) share one exactly when a machine has more ranks than GPUs.
TEST_F(MpiCommunicatorTest, NcclOnlyWhereEveryRankHasItsOwnGpu) {
  if (comm_->AnyTrue(CudaDeviceCount() == 0)) GTEST_SKIP() << "needs a GPU on every rank";
  CUDA_CHECK(cudaSetDevice(comm_->local_rank() % CudaDeviceCount()));
  const bool shared = comm_->AnyTrue(comm_->local_size() > CudaDeviceCount());
  const int64_t bytes_before = comm_->stats().total_bytes_sent();
  EXPECT_EQ(EveryRankHasItsOwnGpu(comm_), !shared);
  // A setup message, not exchange traffic.
  EXPECT_EQ(comm_->stats().total_bytes_sent(), bytes_before);
}

#endif  // USE_NCCL

}  // namespace
}  // namespace caffe

#endif  // USE_MPI
