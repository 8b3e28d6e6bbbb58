// Collective operations between the ranks of one training job, independent of the
// transport. MpiCommunicator moves host buffers over Open MPI, NcclCommunicator moves
// device buffers over NCCL, LocalCommunicator is the single-rank case. The gradient
// exchange strategies are written against this interface only, and get theirs handed
// in (transport.hpp).
//
// Every call is collective: all ranks call it in the same order with matching
// counts. Counts are in elements and may exceed 2^31 (large calls are split).
#ifndef CAFFE_SYNC_COMMUNICATOR_HPP_
#define CAFFE_SYNC_COMMUNICATOR_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace caffe {

// Bytes this rank put on the wire, and seconds spent, per kind of operation.
// Where the buffers a communicator's collectives take must live.
enum class BufferMemory { HOST, DEVICE };

struct CommStats {
  struct Entry {
    int64_t calls = 0;
    int64_t bytes_sent = 0;
    double seconds = 0;
  };
  std::map<std::string, Entry> by_op;  // "allreduce", "broadcast", "allgather", ...
  int64_t total_bytes_sent() const;
  double total_seconds() const;
  void Clear() { by_op.clear(); }
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks on this machine, and this rank's index among them (GPU choice, threads).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // "mpi", "nccl" or "local", for logs and messages; code chooses by memory().
  virtual std::string backend() const = 0;
  // Which memory every buffer passed to the collectives below is in.
  virtual BufferMemory memory() const = 0;

  // In-place sum over all ranks. Ring algorithm (reduce-scatter, then all-gather):
  // each rank sends 2 (N-1)/N of the buffer.
  virtual void AllReduceSum(float* data, int64_t count) = 0;
  // The same sum with the values on the wire in half precision (half_precision.hpp):
  // each partial sum a rank forwards, and the finished sum of the chunk it owns, is
  // rounded to half, and what a rounding removed is added to this rank's
  // rounding_error[i] (count floats). On return `data` holds the sum, the same bits
  // on every rank, and (the sum) + (rounding_error summed over ranks) = (the sum of
  // the inputs) up to float arithmetic. Half the bytes of AllReduceSum. Backends
  // without it (NCCL) throw caffe::Error.
  virtual void AllReduceSumHalf(float* data, int64_t count, float* rounding_error);
  // The same with block-scaled 8-bit values on the wire (block_int8.hpp): the same
  // accounting, about 17/32 of the half-precision bytes. Backends without it throw.
  virtual void AllReduceSumInt8(float* data, int64_t count, float* rounding_error);
  // root's buffer is copied to every rank.
  virtual void Broadcast(void* data, int64_t bytes, int root) = 0;
  // Fixed size: every rank contributes `count` floats; `out` holds size() * count,
  // rank r's block at r * count.
  virtual void AllGather(const float* in, int64_t count, float* out) = 0;
  virtual void AllGatherBytes(const void* in, int64_t bytes, void* out) = 0;
  // Variable size: rank r contributes counts[r] floats (every rank passes the same
  // counts); `out` holds them concatenated in rank order.
  virtual void AllGatherV(const float* in, const std::vector<int64_t>& counts, float* out) = 0;
  virtual void Barrier() = 0;
  // Logical OR of a flag over all ranks (used to stop together).
  virtual bool AnyTrue(bool flag) = 0;
  // AnyTrue after rank 0 alone has done `work` (a test pass), OR-ing in what `work`
  // returns. The others wait for it however long it takes, as long as rank 0 is
  // alive: transports with a deadline (comm_deadline.hpp) have rank 0 say so at
  // intervals while it works, so that only a silent rank 0 ends the job. By default:
  // work on rank 0, then AnyTrue.
  virtual bool AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work);

  // An ordered queue of asynchronous work: a cudaStream_t for a device communicator.
  using Queue = void*;
  // Starts the in-place sum on `queue` and may return before it is done: `data` is
  // ready once Wait(queue) returns. Backends without asynchronous collectives (the
  // host ones) finish it before returning. Counted like AllReduceSum, without time.
  virtual void AllReduceSumAsync(float* data, int64_t count, Queue queue) {
    AllReduceSum(data, count);
  }
  // Returns once everything started on `queue` has finished; a lost peer or a time
  // limit ends in caffe::Error naming `op`, never a hang.
  virtual void Wait(Queue queue, const char* op) {}

  const CommStats& stats() const { return stats_; }
  CommStats& mutable_stats() { return stats_; }

 protected:
  CommStats stats_;
};

// The communicator for this process: MPI when started under mpirun (or srun) with
// more than one rank and MPI is built in, else the local one. Initialises MPI on
// first use and finalises it at exit.
std::shared_ptr<Communicator> CreateCommunicator();
// True when the environment says this process is one of several launched ranks
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS...).
bool LaunchedAsMultipleRanks();

}  // namespace caffe

#endif  // CAFFE_SYNC_COMMUNICATOR_HPP_
