// Collectives on device buffers with NCCL, one GPU per rank. MPI is the control
// plane: it bootstraps the NCCL unique id, and carries barriers and stop flags.
// Byte counters follow MpiCommunicator's conventions (ring volume for all-reduce, a
// chain for broadcast, N-1 copies of the own block for gathers).
//
// Every call enqueues on the communicator's own stream and waits for it before
// returning, so results are ready for host and device alike and timings are real.
// The stream is a blocking stream: it is ordered after work already queued on the
// legacy default stream, where the layers run.
//
// Only compiled with USE_NCCL (which implies USE_CUDA and USE_MPI).
#ifndef CAFFE_SYNC_NCCL_COMMUNICATOR_HPP_
#define CAFFE_SYNC_NCCL_COMMUNICATOR_HPP_

#ifdef USE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "caffe/sync/communicator.hpp"
#include "caffe/sync/mpi_communicator.hpp"

namespace caffe {

class NcclCommunicator : public Communicator {
 public:
  // device < 0 picks GPU local_rank mod (GPUs on this machine).
  explicit NcclCommunicator(int device = -1);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int local_rank() const override { return mpi_->local_rank(); }
  int local_size() const override { return mpi_->local_size(); }
  std::string backend() const override { return "nccl"; }
  BufferMemory memory() const override { return BufferMemory::DEVICE; }

  // All buffers are device pointers on device().
  void AllReduceSum(float* data, int64_t count) override;
  void Broadcast(void* data, int64_t bytes, int root) override;
  void AllGather(const float* in, int64_t count, float* out) override;
  void AllGatherBytes(const void* in, int64_t bytes, void* out) override;
  void AllGatherV(const float* in, const std::vector<int64_t>& counts, float* out) override;
  void Barrier() override;
  bool AnyTrue(bool flag) override;
  bool AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work) override;

  // `queue` is a cudaStream_t. Enqueues the sum there and returns at once: lets the
  // DENSE exchange overlap a bucket's all-reduce with backward.
  void AllReduceSumAsync(float* data, int64_t count, Queue queue) override;
  // Waits for the stream like every collective here does: polling NCCL's asynchronous
  // error and the deadline (comm_deadline.hpp), so a lost peer ends in an error, not a hang.
  void Wait(Queue queue, const char* op) override;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

 private:
  void Gather(const void* in, int64_t count, ncclDataType_t type, void* out);
  // Waits for the stream and records the call.
  void Finish(const char* op, int64_t bytes, double start_seconds);

  std::unique_ptr<MpiCommunicator> mpi_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Whether every rank of `control`'s job trains on a GPU of its own, so that NCCL can
// serve it: ncclCommInitRank refuses two ranks on one device ("Duplicate GPU
// detected", invalid usage), which -gpu all with more ranks than GPUs on a machine,
// one -gpu id or the solver's device_id for every rank all produce. Collective over
// `control` (host memory; not counted as exchange traffic): every rank calls it at
// the same point. True for a single rank.
bool EveryRankHasItsOwnGpu(Communicator* control);

}  // namespace caffe

#endif  // USE_NCCL
#endif  // CAFFE_SYNC_NCCL_COMMUNICATOR_HPP_
