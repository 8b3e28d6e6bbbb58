// Collectives on host buffers between the processes of one mpirun/srun job, over a
// private duplicate of MPI_COMM_WORLD (so our messages never match anyone else's).
//
// Byte counters record what THIS rank sends, by these conventions:
//  - all-reduce: the ring volume, 2 (N-1)/N of the buffer, exactly as the ring below
//    splits it (RingAllReduceBytesSent); MPI_NATIVE records the same nominal figure,
//    whatever algorithm MPI picks internally.
//  - broadcast: a chain from the root: every rank except the last of the chain
//    (rank root-1 mod N) forwards the whole buffer, so N-1 ranks record `bytes`.
//  - all-gather(v): ring convention, each rank sends its own block to N-1 ranks.
//  - barrier, any-true: control messages, 0 bytes.
//
// Only compiled with USE_MPI.
#ifndef CAFFE_SYNC_MPI_COMMUNICATOR_HPP_
#define CAFFE_SYNC_MPI_COMMUNICATOR_HPP_

#ifdef USE_MPI

#include <mpi.h>

#include <climits>
#include <string>
#include <vector>

#include "caffe/sync/communicator.hpp"

namespace caffe {

// MPI_Init_thread on the first call (MPI_Finalize registered with atexit); later calls
// and an MPI that someone else initialised are fine.
void InitMpiOnce();
// Throws caffe::Error naming `op` and MPI's own message unless status is MPI_SUCCESS.
void ThrowIfMpiError(int status, const char* op);
// Ends every rank of the job with `status` (MPI_Abort), for an error that may have hit
// this rank only while the others wait for it in a collective. What this rank has
// written to stdout/stderr reaches mpirun's output first.
[[noreturn]] void AbortMpiJob(int status);

class MpiCommunicator : public Communicator {
 public:
  enum AllReduceAlgorithm {
    RING_P2P,    // our ring: reduce-scatter then all-gather, MPI_Sendrecv per chunk
    MPI_NATIVE,  // MPI_Allreduce, algorithm chosen by the MPI library
  };

  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string backend() const override { return "mpi"; }
  BufferMemory memory() const override { return BufferMemory::HOST; }

  void AllReduceSum(float* data, int64_t count) override;
  // Always our ring (MPI has no half-precision sum), whatever the algorithm setting.
  void AllReduceSumHalf(float* data, int64_t count, float* rounding_error) override;
  // Likewise, in block-scaled 8-bit values (block_int8.hpp).
  void AllReduceSumInt8(float* data, int64_t count, float* rounding_error) override;
  void Broadcast(void* data, int64_t bytes, int root) override;
  void AllGather(const float* in, int64_t count, float* out) override;
  void AllGatherBytes(const void* in, int64_t bytes, void* out) override;
  void AllGatherV(const float* in, const std::vector<int64_t>& counts, float* out) override;
  void Barrier() override;
  bool AnyTrue(bool flag) override;
  // Rank 0 sends a one-byte heartbeat to every rank each quarter of the deadline
  // while it works (from a thread of its own: the main thread makes no MPI call
  // meanwhile); the others restart their deadline at each.
  bool AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work) override;

  AllReduceAlgorithm allreduce_algorithm() const { return algorithm_; }
  void set_allreduce_algorithm(AllReduceAlgorithm algorithm) { algorithm_ = algorithm; }
  // Largest element count handed to a single MPI call (MPI counts are int). Larger
  // operations are split; tests lower it to exercise the splitting on small buffers.
  int64_t max_count_per_call() const { return max_count_per_call_; }
  void set_max_count_per_call(int64_t count);

  MPI_Comm mpi_comm() const { return comm_; }

  // Ring chunking shared by the algorithm and its byte counter: `count` elements in
  // `size` chunks, the first count % size chunks one element longer.
  static int64_t RingChunkBegin(int64_t count, int size, int chunk);
  // Elements of `count` that `rank` sends in the ring all-reduce, times sizeof(float):
  // every chunk twice except the two it receives last in each phase.
  static int64_t RingAllReduceBytesSent(int64_t count, int size, int rank);

 private:
  // Both rings cut every chunk into RingPieces(count) pieces of at most
  // max_count_per_call_ elements (RingPieceCapacity); RingPiece is piece j of a chunk.
  int64_t RingPieces(int64_t count) const;
  int64_t RingPieceCapacity(int64_t count, int64_t pieces) const;
  static void RingPiece(int64_t count, int size, int64_t pieces, int chunk, int64_t j,
                        int64_t* begin, int* length);
  void RingAllReduce(float* data, int64_t count);
  // How values travel in an encoded ring: bytes(count) of wire for count values;
  // encode writes them and what each decodes to; decode reads them back.
  struct WireCodec {
    int64_t (*bytes)(int64_t count);
    void (*encode)(const float* in, int64_t count, uint8_t* out, float* arrives);
    void (*decode)(const uint8_t* in, int64_t count, float* out);
  };
  static const WireCodec kHalfCodec, kBlockInt8Codec;
  // The ring with every partial sum a rank forwards, and the finished sum of the chunk
  // it owns, encoded by `codec`; what the encodings remove is added to
  // rounding_error. Returns the bytes this rank sent.
  int64_t RingAllReduceEncoded(float* data, int64_t count, float* rounding_error,
                               const WireCodec& codec);
  void NativeAllReduce(float* data, int64_t count);
  // Fixed-size gather of `count` elements of `type` (elem_size bytes) per rank.
  void GatherBlocks(const void* in, int64_t count, MPI_Datatype type, size_t elem_size,
                    void* out);
  void Record(const char* op, int64_t bytes, double seconds);
  // Every collective is a non-blocking MPI call and this wait: MPI_Testall until the
  // requests are done, napping between polls on a CommThread (comm_thread.hpp). A
  // failure, or silence past the deadline (comm_deadline.hpp), is a caffe::Error
  // naming `op`. peers[i], where given, is the rank request i waits on (-1: unknown).
  void WaitForRequests(MPI_Request* requests, int count, const char* op,
                       const int* peers = nullptr);
  // The ranks that the unfinished requests wait on, as "1, 3" ("" if unknown).
  std::string PendingPeers(MPI_Request* requests, int count, const int* peers) const;
  // One ring step: `send` to rank `to` and `receive` from rank `from` at once.
  void SendReceive(const void* send, int send_count, MPI_Datatype type, int to, void* receive,
                   int receive_count, int from, const char* op);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  // Our ring by default. bench/README.md ("All-reduce on MPI", Open MPI 4.1, one
  // machine): the two tie from 256 KB to 16 MB, and from 64 MB up, the full-gradient
  // sizes a dense exchange moves, the ring is 1.7-2x faster at 2 and 4 ranks.
  // MPI_Allreduce wins only below ~64 KB at 4 ranks, by tens of microseconds
  // (recursive doubling takes log2 N steps, the ring 2 (N-1)); callers that exchange
  // many tiny buffers can switch.
  AllReduceAlgorithm algorithm_ = RING_P2P;
  int64_t max_count_per_call_ = INT_MAX;
  std::vector<float> scratch_;  // ring reduce-scatter receive buffer
  // The encoded ring's send and receive buffers, and what the values it sends arrive as.
  std::vector<uint8_t> wire_send_, wire_receive_;
  std::vector<float> wire_arrives_;
  // The encoded ring's all-gather: one buffer per piece for what this rank forwards
  // next and what it receives (kept between calls, so a step allocates nothing).
  std::vector<std::vector<uint8_t>> gather_forward_, gather_incoming_;
};

}  // namespace caffe

#endif  // USE_MPI
#endif  // CAFFE_SYNC_MPI_COMMUNICATOR_HPP_
