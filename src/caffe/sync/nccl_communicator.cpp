// NCCL communicator: device-buffer collectives on a private stream, bootstrapped and
// controlled over MPI.
#ifdef USE_NCCL

#include <glog/logging.h>

#include "caffe/sync/nccl_communicator.hpp"

#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "caffe/sync/comm_deadline.hpp"
#include "caffe/util/error.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ThrowIfNcclError(ncclResult_t status, const char* op) {
  if (status == ncclSuccess) return;
  ErrorBuilder() << "NCCL " << op << " failed: " << ncclGetErrorString(status);
}

int Mod(int value, int n) { return ((value % n) + n) % n; }

// After an abort every later call fails the same clear way instead of using a dead
// communicator.
void RequireLive(ncclComm_t comm, int rank, int size, const char* op) {
  CAFFE_REQUIRE(comm != nullptr) << "NCCL " << op << " on rank " << rank << " of " << size
                                 << ": the communicator was aborted after an earlier failure";
}

// Waits for `op` to finish on `stream`. A plain cudaStreamSynchronize would block for
// ever when a peer rank dies mid-collective, so this polls the stream and NCCL's
// asynchronous error state instead; on an error or at the deadline (comm_deadline.hpp,
// after a warning at half of it) it aborts the communicator (which releases the stuck
// kernels) and throws, naming rank and op.
void WaitForCollective(cudaStream_t stream, ncclComm_t* comm, int rank, int size,
                       const char* op) {
  RequireLive(*comm, rank, size, op);
  auto abort_and_fail = [&](const std::string& why) {
    ncclCommAbort(*comm);
    *comm = nullptr;
    ErrorBuilder() << "NCCL " << op << " on rank " << rank << " of " << size << " " << why
                   << "; communicator aborted (a peer rank is probably lost)";
  };
  CommWaitDeadline deadline(op);
  for (int polls = 0;; ++polls) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      abort_and_fail(std::string("hit a CUDA error: ") + cudaGetErrorString(status));
    }
    // "Not ready" is an answer, not a failure: keep it out of the thread's last-error
    // state, where the next CUDA_CHECK(cudaPeekAtLastError()) after a kernel launch
    // would take it for a launch error (the runtime documents no exception for it).
    cudaGetLastError();
    ncclResult_t async = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(*comm, &async);
    if (query != ncclSuccess) async = query;
    if (async != ncclSuccess) {
      abort_and_fail(std::string("failed: ") + ncclGetErrorString(async));
    }
    if (deadline.Due()) {
      try {
        deadline.Report(LateRanksOfCollective(rank, size));
      } catch (const Error& e) {
        abort_and_fail(std::string("timed out: ") + e.what());
      }
    }
    // Most collectives finish within microseconds: spin briefly before sleeping, so
    // that polling adds no latency to them and no CPU load to long ones.
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace

bool EveryRankHasItsOwnGpu(Communicator* control) {
  if (control->size() < 2) return true;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  // The UUID names one physical GPU across machines, whatever CUDA_VISIBLE_DEVICES
  // made of its index.
  constexpr int kIdBytes = sizeof(prop.uuid);
  std::vector<char> ids(static_cast<size_t>(kIdBytes) * control->size());
  // A setup message, not exchange traffic: the counters stay as they were.
  const CommStats counted = control->stats();
  control->AllGatherBytes(&prop.uuid, kIdBytes, ids.data());
  control->mutable_stats() = counted;
  std::set<std::string> distinct;
  for (int r = 0; r < control->size(); ++r) distinct.emplace(ids.data() + r * kIdBytes, kIdBytes);
  return static_cast<int>(distinct.size()) == control->size();
}

NcclCommunicator::NcclCommunicator(int device) : mpi_(std::make_unique<MpiCommunicator>()) {
  const int devices = CudaDeviceCount();
  CAFFE_REQUIRE(devices > 0) << "NCCL communicator: no CUDA device on rank " << rank();
  device_ = device >= 0 ? device : local_rank() % devices;
  CAFFE_REQUIRE(device_ < devices)
      << "NCCL communicator: device " << device_ << " requested, " << devices << " present";
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaStreamCreate(&stream_));

  ncclUniqueId id;
  if (rank() == 0) ThrowIfNcclError(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ThrowIfMpiError(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_->mpi_comm()),
                  "MPI_Bcast (NCCL unique id)");
  ThrowIfNcclError(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclCommunicator::Finish(const char* op, int64_t bytes, double start_seconds) {
  WaitForCollective(stream_, &comm_, rank(), size(), op);
  CommStats::Entry& entry = stats_.by_op[op];
  ++entry.calls;
  entry.bytes_sent += bytes;
  entry.seconds += NowSeconds() - start_seconds;
}

void NcclCommunicator::AllReduceSum(float* data, int64_t count) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSum: negative count " << count;
  RequireLive(comm_, rank(), size(), "allreduce");
  const double start = NowSeconds();
  CUDA_CHECK(cudaSetDevice(device_));
  if (count > 0) {
    ThrowIfNcclError(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_),
                     "ncclAllReduce");
  }
  // NCCL's ring moves exactly the ring volume; the tree algorithm moves about as much.
  Finish("allreduce", MpiCommunicator::RingAllReduceBytesSent(count, size(), rank()), start);
}

void NcclCommunicator::AllReduceSumAsync(float* data, int64_t count, Queue queue) {
  cudaStream_t stream = static_cast<cudaStream_t>(queue);
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumAsync: negative count " << count;
  RequireLive(comm_, rank(), size(), "allreduce (async)");
  CUDA_CHECK(cudaSetDevice(device_));
  if (count > 0) {
    ThrowIfNcclError(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream),
                     "ncclAllReduce");
  }
  CommStats::Entry& entry = stats_.by_op["allreduce"];
  ++entry.calls;
  entry.bytes_sent += MpiCommunicator::RingAllReduceBytesSent(count, size(), rank());
}

void NcclCommunicator::Wait(Queue queue, const char* op) {
  WaitForCollective(static_cast<cudaStream_t>(queue), &comm_, rank(), size(), op);
}

void NcclCommunicator::Broadcast(void* data, int64_t bytes, int root) {
  CAFFE_REQUIRE(bytes >= 0) << "Broadcast: negative byte count " << bytes;
  CAFFE_REQUIRE(root >= 0 && root < size())
      << "Broadcast: root " << root << " is not a rank of " << size();
  RequireLive(comm_, rank(), size(), "broadcast");
  const double start = NowSeconds();
  CUDA_CHECK(cudaSetDevice(device_));
  if (bytes > 0) {
    ThrowIfNcclError(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_),
                     "ncclBroadcast");
  }
  const bool forwards = size() > 1 && rank() != Mod(root - 1, size());
  Finish("broadcast", forwards ? bytes : 0, start);
}

void NcclCommunicator::Gather(const void* in, int64_t count, ncclDataType_t type,
                              void* out) {
  RequireLive(comm_, rank(), size(), "allgather");
  CUDA_CHECK(cudaSetDevice(device_));
  if (count > 0) {
    ThrowIfNcclError(ncclAllGather(in, out, count, type, comm_, stream_), "ncclAllGather");
  }
}

void NcclCommunicator::AllGather(const float* in, int64_t count, float* out) {
  CAFFE_REQUIRE(count >= 0) << "AllGather: negative count " << count;
  const double start = NowSeconds();
  Gather(in, count, ncclFloat, out);
  Finish("allgather", (size() - 1) * count * static_cast<int64_t>(sizeof(float)), start);
}

void NcclCommunicator::AllGatherBytes(const void* in, int64_t bytes, void* out) {
  CAFFE_REQUIRE(bytes >= 0) << "AllGatherBytes: negative byte count " << bytes;
  const double start = NowSeconds();
  Gather(in, bytes, ncclUint8, out);
  Finish("allgather", (size() - 1) * bytes, start);
}

void NcclCommunicator::AllGatherV(const float* in, const std::vector<int64_t>& counts,
                                  float* out) {
  CAFFE_REQUIRE(static_cast<int>(counts.size()) == size())
      << "AllGatherV: expected one count per rank (" << size() << "), got " << counts.size();
  for (int r = 0; r < size(); ++r) {
    CAFFE_REQUIRE(counts[r] >= 0) << "AllGatherV: negative count " << counts[r]
                                  << " for rank " << r;
  }
  RequireLive(comm_, rank(), size(), "allgatherv");
  const double start = NowSeconds();
  CUDA_CHECK(cudaSetDevice(device_));
  // NCCL has no variable-size gather: one broadcast per rank, fused into one launch.
  ThrowIfNcclError(ncclGroupStart(), "ncclGroupStart");
  int64_t offset = 0;
  for (int r = 0; r < size(); ++r) {
    if (counts[r] > 0) {
      const float* send = r == rank() ? in : out + offset;
      ThrowIfNcclError(ncclBroadcast(send, out + offset, counts[r], ncclFloat, r, comm_, stream_),
                       "ncclBroadcast (all-gather-v)");
    }
    offset += counts[r];
  }
  ThrowIfNcclError(ncclGroupEnd(), "ncclGroupEnd");
  Finish("allgatherv", (size() - 1) * counts[rank()] * static_cast<int64_t>(sizeof(float)),
         start);
}

void NcclCommunicator::Barrier() {
  const double start = NowSeconds();
  // Pending device work first, so that "after the barrier" means finished everywhere.
  WaitForCollective(stream_, &comm_, rank(), size(), "barrier (pending collectives)");
  mpi_->Barrier();
  Finish("barrier", 0, start);
}

bool NcclCommunicator::AnyTrue(bool flag) {
  const double start = NowSeconds();
  const bool any = mpi_->AnyTrue(flag);
  Finish("anytrue", 0, start);
  return any;
}

bool NcclCommunicator::AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work) {
  const double start = NowSeconds();
  const bool any = mpi_->AnyTrueAfterRootWork(flag, work);
  Finish("anytrue", 0, start);
  return any;
}

}  // namespace caffe

#endif  // USE_NCCL
