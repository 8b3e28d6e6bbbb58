// MPI communicator: our ring all-reduce on MPI point-to-point next to MPI's own
// collectives, with MPI's int counts lifted to int64 by splitting.
#include <glog/logging.h>

#include "caffe/sync/mpi_communicator.hpp"

#ifdef USE_MPI

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include <unistd.h>

#include "caffe/sync/block_int8.hpp"
#include "caffe/sync/comm_deadline.hpp"
#include "caffe/sync/comm_thread.hpp"
#include "caffe/sync/half_precision.hpp"

#include "caffe/util/error.hpp"
#include "caffe/util/output_drain.hpp"

namespace caffe {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Mod(int value, int n) { return ((value % n) + n) % n; }

void FinalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// A derived datatype freed on scope exit, so that an MPI error thrown mid-call does
// not leak it.
struct ScopedType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  ~ScopedType() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};

constexpr int kRingTag = 17;
// Rank 0's "still working" messages (AnyTrueAfterRootWork).
constexpr int kHeartbeatTag = 18;
// How long a wait on a CommThread sleeps between polls while the main thread computes.
constexpr int kNapMicroseconds = 50;

}  // namespace

void InitMpiOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;  // the embedding program owns MPI's lifetime
    // SERIALIZED: the exchange may run on a thread other than main, but one at a time.
    int provided = 0;
    int status = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    ThrowIfMpiError(status, "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      LOG(WARNING) << "MPI provides thread level " << provided
                   << " < MPI_THREAD_SERIALIZED: call the communicator from one thread only";
    }
    std::atexit(FinalizeMpi);
  });
}

void AbortMpiJob(int status) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // mpirun forwards each rank's output through a pipe that it reads on its own
  // schedule; an abort that arrives first can drop the very error line that explains
  // it. So wait until mpirun has taken the output, then give it a moment to print
  // what it took: cheap next to a job that is ending anyway.
  WaitUntilOutputIsRead(STDERR_FILENO, std::chrono::seconds(5));
  WaitUntilOutputIsRead(STDOUT_FILENO, std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  MPI_Abort(MPI_COMM_WORLD, status);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

void ThrowIfMpiError(int status, const char* op) {
  if (status == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(status, message, &length) != MPI_SUCCESS) length = 0;
  ErrorBuilder() << "MPI " << op << " failed: "
                 << (length > 0 ? std::string(message, length) : "error code " +
                                                                    std::to_string(status));
}

MpiCommunicator::MpiCommunicator() {
  InitMpiOnce();
  // Errors on our own duplicate come back as return codes (turned into caffe::Error)
  // instead of aborting the job, without changing MPI_COMM_WORLD's handler for others.
  ThrowIfMpiError(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  ThrowIfMpiError(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  ThrowIfMpiError(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  ThrowIfMpiError(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  ThrowIfMpiError(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
                  "MPI_Comm_split_type");
  ThrowIfMpiError(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
  ThrowIfMpiError(MPI_Comm_size(node, &local_size_), "MPI_Comm_size");
  MPI_Comm_free(&node);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::set_max_count_per_call(int64_t count) {
  CAFFE_REQUIRE(count >= 1 && count <= INT_MAX)
      << "max_count_per_call must be in [1, " << INT_MAX << "], got " << count;
  max_count_per_call_ = count;
}

void MpiCommunicator::Record(const char* op, int64_t bytes, double seconds) {
  CommStats::Entry& entry = stats_.by_op[op];
  ++entry.calls;
  entry.bytes_sent += bytes;
  entry.seconds += seconds;
}

void MpiCommunicator::WaitForRequests(MPI_Request* requests, int count, const char* op,
                                      const int* peers) {
  // MPI's own waits spin. On a CommThread while the main thread computes, a spin would
  // take half the rank's core from backward: nap between polls there instead. The nap
  // is short against what it waits for (a message on a link of 1 Gbit/s or less), and
  // the data keeps moving meanwhile: the kernel's socket buffers carry it.
  CommWaitDeadline deadline(op);
  while (true) {
    int done = 0;
    ThrowIfMpiError(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), op);
    if (done) return;
    if (deadline.Due()) deadline.Report(PendingPeers(requests, count, peers));
    if (CommThread::ShouldNap()) std::this_thread::sleep_for(std::chrono::microseconds(kNapMicroseconds));
  }
}

std::string MpiCommunicator::PendingPeers(MPI_Request* requests, int count, const int* peers) const {
  if (peers == nullptr) return LateRanksOfCollective(rank_, size_);
  std::set<int> pending;
  for (int i = 0; i < count; ++i) {
    int done = 0;
    // Looks without completing: an unfinished MPI_Testall has left every request as it was.
    MPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
    if (!done && peers[i] >= 0) pending.insert(peers[i]);
  }
  std::string text;
  for (int peer : pending) text += (text.empty() ? "" : ", ") + std::to_string(peer);
  return text;
}

void MpiCommunicator::SendReceive(const void* send, int send_count, MPI_Datatype type, int to,
                                  void* receive, int receive_count, int from, const char* op) {
  MPI_Request requests[2];
  ThrowIfMpiError(MPI_Irecv(receive, receive_count, type, from, kRingTag, comm_, &requests[0]), op);
  ThrowIfMpiError(MPI_Isend(send, send_count, type, to, kRingTag, comm_, &requests[1]), op);
  const int peers[2] = {from, to};
  WaitForRequests(requests, 2, op, peers);
}

int64_t MpiCommunicator::RingChunkBegin(int64_t count, int size, int chunk) {
  return chunk * (count / size) + std::min<int64_t>(chunk, count % size);
}

int64_t MpiCommunicator::RingAllReduceBytesSent(int64_t count, int size, int rank) {
  if (size <= 1) return 0;
  auto length = [&](int chunk) {
    return RingChunkBegin(count, size, chunk + 1) - RingChunkBegin(count, size, chunk);
  };
  // Reduce-scatter sends every chunk but rank+1 (the one this rank ends up owning),
  // all-gather every chunk but rank+2 (the last one it receives). Summed over ranks
  // that is exactly 2 (N-1) x count; a rank's share differs from 2 (N-1)/N x count
  // by the rounding of the chunk lengths only.
  const int64_t elements =
      2 * count - length((rank + 1) % size) - length((rank + 2) % size);
  return elements * static_cast<int64_t>(sizeof(float));
}

int64_t MpiCommunicator::RingPieces(int64_t count) const {
  // Chunk 0 is a longest chunk. Every chunk is cut into the same number of pieces so
  // that sender and receiver agree on message boundaries whatever the chunk lengths.
  const int64_t longest = RingChunkBegin(count, size_, 1);
  return std::max<int64_t>(1, (longest + max_count_per_call_ - 1) / max_count_per_call_);
}

int64_t MpiCommunicator::RingPieceCapacity(int64_t count, int64_t pieces) const {
  return (RingChunkBegin(count, size_, 1) + pieces - 1) / pieces;
}

void MpiCommunicator::RingPiece(int64_t count, int size, int64_t pieces, int chunk, int64_t j,
                                int64_t* begin, int* length) {
  const int64_t chunk_begin = RingChunkBegin(count, size, chunk);
  const int64_t chunk_length = RingChunkBegin(count, size, chunk + 1) - chunk_begin;
  *begin = chunk_begin + j * (chunk_length / pieces) + std::min(j, chunk_length % pieces);
  *length = static_cast<int>(chunk_length / pieces + (j < chunk_length % pieces ? 1 : 0));
}

void MpiCommunicator::RingAllReduce(float* data, int64_t count) {
  const int n = size_;
  const int right = Mod(rank_ + 1, n);
  const int left = Mod(rank_ - 1, n);
  const int64_t pieces = RingPieces(count);
  auto piece = [&](int chunk, int64_t j, int64_t* begin, int* length) {
    RingPiece(count, n, pieces, chunk, j, begin, length);
  };
  scratch_.resize(std::max<size_t>(scratch_.size(), RingPieceCapacity(count, pieces)));
  int64_t elements_sent = 0;

  // Reduce-scatter: at step s this rank adds its left neighbour's partial sum of chunk
  // rank-s-1 into its own; after N-1 steps it holds the full sum of chunk rank+1.
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ - step, n);
    const int recv_chunk = Mod(rank_ - step - 1, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      SendReceive(data + send_begin, send_length, MPI_FLOAT, right, scratch_.data(), recv_length,
                  left, "all-reduce (ring reduce-scatter)");
      float* __restrict sum = data + recv_begin;
      const float* __restrict received = scratch_.data();
      for (int i = 0; i < recv_length; ++i) sum[i] += received[i];
      elements_sent += send_length;
    }
  }
  // All-gather: the finished chunks travel once around the ring, received in place.
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ + 1 - step, n);
    const int recv_chunk = Mod(rank_ - step, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      SendReceive(data + send_begin, send_length, MPI_FLOAT, right, data + recv_begin, recv_length,
                  left, "all-reduce (ring all-gather)");
      elements_sent += send_length;
    }
  }
  DCHECK_EQ(elements_sent * static_cast<int64_t>(sizeof(float)),
            RingAllReduceBytesSent(count, n, rank_));
}

namespace {

// Half precision: two bytes a value, each rounded alone.
int64_t HalfBytes(int64_t count) { return 2 * count; }

void EncodeHalf(const float* in, int64_t count, uint8_t* out, float* arrives) {
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t half = FloatToHalf(in[i]);
    std::memcpy(out + 2 * i, &half, 2);
    arrives[i] = HalfToFloat(half);
  }
}

void DecodeHalf(const uint8_t* in, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    uint16_t half;
    std::memcpy(&half, in + 2 * i, 2);
    out[i] = HalfToFloat(half);
  }
}

}  // namespace

const MpiCommunicator::WireCodec MpiCommunicator::kHalfCodec = {HalfBytes, EncodeHalf, DecodeHalf};
const MpiCommunicator::WireCodec MpiCommunicator::kBlockInt8Codec = {BlockInt8Bytes, EncodeBlockInt8,
                                                                     DecodeBlockInt8};

int64_t MpiCommunicator::RingAllReduceEncoded(float* data, int64_t count, float* rounding_error,
                                              const WireCodec& codec) {
  const int n = size_;
  const int right = Mod(rank_ + 1, n);
  const int left = Mod(rank_ - 1, n);
  // The float ring's chunks and pieces, each piece encoded on its own; more pieces
  // where an encoded piece would pass MPI's int count of bytes.
  int64_t pieces = RingPieces(count);
  while (codec.bytes(RingPieceCapacity(count, pieces)) > INT_MAX) ++pieces;
  auto piece = [&](int chunk, int64_t j, int64_t* begin, int* length) {
    RingPiece(count, n, pieces, chunk, j, begin, length);
  };
  const int64_t capacity = RingPieceCapacity(count, pieces);
  const int64_t capacity_bytes = codec.bytes(capacity);
  int64_t bytes_sent = 0;
  // data[begin..) becomes what travels of it, encoded into `out`; the difference is
  // this rank's rounding.
  auto encode = [&](int64_t begin, int length, uint8_t* out) {
    codec.encode(data + begin, length, out, wire_arrives_.data());
    for (int i = 0; i < length; ++i) {
      rounding_error[begin + i] += data[begin + i] - wire_arrives_[i];
      data[begin + i] = wire_arrives_[i];
    }
  };
  auto exchange = [&](const uint8_t* send, int send_length, uint8_t* receive, int recv_length,
                      const char* what) {
    const int64_t send_bytes = codec.bytes(send_length);
    SendReceive(send, static_cast<int>(send_bytes), MPI_BYTE, right, receive,
                static_cast<int>(codec.bytes(recv_length)), left, what);
    bytes_sent += send_bytes;
  };
  wire_send_.resize(std::max<size_t>(wire_send_.size(), capacity_bytes));
  wire_receive_.resize(std::max<size_t>(wire_receive_.size(), capacity_bytes));
  wire_arrives_.resize(std::max<size_t>(wire_arrives_.size(), capacity));
  // Reduce-scatter as in RingAllReduce, each partial sum rounded as it leaves. What
  // arrives is decoded into wire_arrives_, free again once encode has used it.
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ - step, n);
    const int recv_chunk = Mod(rank_ - step - 1, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      encode(send_begin, send_length, wire_send_.data());
      exchange(wire_send_.data(), send_length, wire_receive_.data(), recv_length,
               "all-reduce, encoded values (ring reduce-scatter)");
      codec.decode(wire_receive_.data(), recv_length, wire_arrives_.data());
      for (int i = 0; i < recv_length; ++i) data[recv_begin + i] += wire_arrives_[i];
    }
  }
  // The finished sum of the owned chunk is rounded once more; then every chunk travels
  // once around the ring as it was encoded, each rank forwarding what it received.
  const int owned = Mod(rank_ + 1, n);
  std::vector<std::vector<uint8_t>>& forward = gather_forward_;
  std::vector<std::vector<uint8_t>>& incoming = gather_incoming_;
  if (static_cast<int64_t>(forward.size()) < pieces) {
    forward.resize(pieces);
    incoming.resize(pieces);
  }
  for (int64_t j = 0; j < pieces; ++j) {
    int64_t begin;
    int length;
    piece(owned, j, &begin, &length);
    forward[j].resize(codec.bytes(length));
    encode(begin, length, forward[j].data());
  }
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ + 1 - step, n);
    const int recv_chunk = Mod(rank_ - step, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      incoming[j].resize(codec.bytes(recv_length));
      exchange(forward[j].data(), send_length, incoming[j].data(), recv_length,
               "all-reduce, encoded values (ring all-gather)");
      codec.decode(incoming[j].data(), recv_length, data + recv_begin);
    }
    std::swap(forward, incoming);
  }
  return bytes_sent;
}

void MpiCommunicator::AllReduceSumHalf(float* data, int64_t count, float* rounding_error) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumHalf: negative count " << count;
  const auto start = Clock::now();
  // One rank: nothing travels, nothing is rounded.
  int64_t bytes = 0;
  if (size_ > 1 && count > 0) bytes = RingAllReduceEncoded(data, count, rounding_error, kHalfCodec);
  Record("allreduce", bytes, SecondsSince(start));
}

void MpiCommunicator::AllReduceSumInt8(float* data, int64_t count, float* rounding_error) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumInt8: negative count " << count;
  const auto start = Clock::now();
  int64_t bytes = 0;
  if (size_ > 1 && count > 0) {
    bytes = RingAllReduceEncoded(data, count, rounding_error, kBlockInt8Codec);
  }
  Record("allreduce", bytes, SecondsSince(start));
}

void MpiCommunicator::NativeAllReduce(float* data, int64_t count) {
  for (int64_t begin = 0; begin < count; begin += max_count_per_call_) {
    const int length = static_cast<int>(std::min(max_count_per_call_, count - begin));
    MPI_Request request;
    ThrowIfMpiError(
        MPI_Iallreduce(MPI_IN_PLACE, data + begin, length, MPI_FLOAT, MPI_SUM, comm_, &request),
        "MPI_Iallreduce");
    WaitForRequests(&request, 1, "MPI_Allreduce");
  }
}

void MpiCommunicator::AllReduceSum(float* data, int64_t count) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSum: negative count " << count;
  const auto start = Clock::now();
  if (size_ > 1 && count > 0) {
    if (algorithm_ == RING_P2P) {
      RingAllReduce(data, count);
    } else {
      NativeAllReduce(data, count);
    }
  }
  // Both algorithms record the ring's volume: RING_P2P sends exactly that, and for
  // MPI_NATIVE it is the nominal figure (MPI's choice of algorithm is invisible here).
  Record("allreduce", RingAllReduceBytesSent(count, size_, rank_), SecondsSince(start));
}

void MpiCommunicator::Broadcast(void* data, int64_t bytes, int root) {
  CAFFE_REQUIRE(bytes >= 0) << "Broadcast: negative byte count " << bytes;
  CAFFE_REQUIRE(root >= 0 && root < size_)
      << "Broadcast: root " << root << " is not a rank of " << size_;
  const auto start = Clock::now();
  char* buffer = static_cast<char*>(data);
  for (int64_t begin = 0; begin < bytes; begin += max_count_per_call_) {
    const int length = static_cast<int>(std::min(max_count_per_call_, bytes - begin));
    MPI_Request request;
    ThrowIfMpiError(MPI_Ibcast(buffer + begin, length, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
    WaitForRequests(&request, 1, "broadcast");
  }
  // Chain convention: everyone but the chain's last rank (root-1 mod N) forwards it all.
  const bool forwards = size_ > 1 && rank_ != Mod(root - 1, size_);
  Record("broadcast", forwards ? bytes : 0, SecondsSince(start));
}

void MpiCommunicator::GatherBlocks(const void* in, int64_t count, MPI_Datatype type,
                                   size_t elem_size, void* out) {
  if (count == 0) return;
  char* out_bytes = static_cast<char*>(out);
  const int64_t block_bytes = count * static_cast<int64_t>(elem_size);
  // MPI forbids an input aliasing the output unless it is passed as MPI_IN_PLACE.
  const bool in_place = in == out_bytes + rank_ * block_bytes;
  if (count <= max_count_per_call_) {
    const int length = static_cast<int>(count);
    MPI_Request request;
    ThrowIfMpiError(MPI_Iallgather(in_place ? MPI_IN_PLACE : in, length, type, out, length,
                                   type, comm_, &request),
                    "MPI_Iallgather");
    WaitForRequests(&request, 1, "all-gather");
    return;
  }
  // Too long for one call: gather slice [begin, begin+length) of every block at once,
  // received through a type whose extent is a whole block, so rank r's slice lands at
  // r * count + begin.
  for (int64_t begin = 0; begin < count; begin += max_count_per_call_) {
    const int length = static_cast<int>(std::min(max_count_per_call_, count - begin));
    ScopedType slice, strided;
    ThrowIfMpiError(MPI_Type_contiguous(length, type, &slice.type), "MPI_Type_contiguous");
    ThrowIfMpiError(MPI_Type_create_resized(slice.type, 0, block_bytes, &strided.type),
                    "MPI_Type_create_resized");
    ThrowIfMpiError(MPI_Type_commit(&strided.type), "MPI_Type_commit");
    const char* send = static_cast<const char*>(in) + begin * elem_size;
    MPI_Request request;
    ThrowIfMpiError(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, length, type,
                                   out_bytes + begin * elem_size, 1, strided.type, comm_, &request),
                    "MPI_Iallgather");
    WaitForRequests(&request, 1, "all-gather");
  }
}

void MpiCommunicator::AllGather(const float* in, int64_t count, float* out) {
  CAFFE_REQUIRE(count >= 0) << "AllGather: negative count " << count;
  const auto start = Clock::now();
  GatherBlocks(in, count, MPI_FLOAT, sizeof(float), out);
  Record("allgather", (size_ - 1) * count * static_cast<int64_t>(sizeof(float)),
         SecondsSince(start));
}

void MpiCommunicator::AllGatherBytes(const void* in, int64_t bytes, void* out) {
  CAFFE_REQUIRE(bytes >= 0) << "AllGatherBytes: negative byte count " << bytes;
  const auto start = Clock::now();
  GatherBlocks(in, bytes, MPI_BYTE, 1, out);
  Record("allgather", (size_ - 1) * bytes, SecondsSince(start));
}

void MpiCommunicator::AllGatherV(const float* in, const std::vector<int64_t>& counts,
                                 float* out) {
  CAFFE_REQUIRE(static_cast<int>(counts.size()) == size_)
      << "AllGatherV: expected one count per rank (" << size_ << "), got " << counts.size();
  std::vector<int64_t> displs(size_ + 1, 0);
  for (int r = 0; r < size_; ++r) {
    CAFFE_REQUIRE(counts[r] >= 0) << "AllGatherV: negative count " << counts[r]
                                  << " for rank " << r;
    displs[r + 1] = displs[r] + counts[r];
  }
  const int64_t total = displs[size_];
  const int64_t mine = counts[rank_];
  const auto start = Clock::now();
  const bool in_place = in == out + displs[rank_];
  if (total > 0 && total <= max_count_per_call_) {
    std::vector<int> int_counts(counts.begin(), counts.end());
    std::vector<int> int_displs(displs.begin(), displs.end() - 1);
    MPI_Request request;
    ThrowIfMpiError(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : in, static_cast<int>(mine),
                                    MPI_FLOAT, out, int_counts.data(), int_displs.data(),
                                    MPI_FLOAT, comm_, &request),
                    "MPI_Iallgatherv");
    WaitForRequests(&request, 1, "all-gather-v");
  } else if (total > 0) {
    // Offsets past INT_MAX do not fit MPI_Allgatherv: every rank broadcasts its block
    // in slices instead, all slices in flight together.
    if (!in_place && mine > 0) std::memcpy(out + displs[rank_], in, mine * sizeof(float));
    std::vector<MPI_Request> requests;
    for (int r = 0; r < size_; ++r) {
      for (int64_t begin = 0; begin < counts[r]; begin += max_count_per_call_) {
        const int length = static_cast<int>(std::min(max_count_per_call_, counts[r] - begin));
        requests.emplace_back();
        ThrowIfMpiError(MPI_Ibcast(out + displs[r] + begin, length, MPI_FLOAT, r, comm_,
                                   &requests.back()),
                        "MPI_Ibcast (all-gather-v)");
      }
    }
    WaitForRequests(requests.data(), static_cast<int>(requests.size()), "all-gather-v");
  }
  Record("allgatherv", (size_ - 1) * mine * static_cast<int64_t>(sizeof(float)),
         SecondsSince(start));
}

void MpiCommunicator::Barrier() {
  const auto start = Clock::now();
  MPI_Request request;
  ThrowIfMpiError(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
  WaitForRequests(&request, 1, "barrier");
  Record("barrier", 0, SecondsSince(start));
}

bool MpiCommunicator::AnyTrue(bool flag) {
  const auto start = Clock::now();
  int value = flag ? 1 : 0;
  MPI_Request request;
  ThrowIfMpiError(MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, comm_, &request),
                  "MPI_Iallreduce (any-true)");
  WaitForRequests(&request, 1, "any-true");
  Record("anytrue", 0, SecondsSince(start));
  return value != 0;
}

bool MpiCommunicator::AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work) {
  const double timeout = CommTimeoutSeconds();
  if (size_ == 1 || timeout <= 0) return Communicator::AnyTrueAfterRootWork(flag, work);
  const auto interval = std::chrono::duration<double>(timeout / 4);
  if (rank_ == 0) {
    std::mutex mutex;
    std::condition_variable wake;
    bool finished = false;
    std::thread heartbeat([&] {
      static const char kBeat = 1;
      std::unique_lock<std::mutex> lock(mutex);
      while (!wake.wait_for(lock, interval, [&] { return finished; })) {
        for (int r = 1; r < size_; ++r) {
          MPI_Request request;
          // Freed at once: a one-byte send completes on its own, and a rank that is
          // gone must not hold this thread.
          if (MPI_Isend(&kBeat, 1, MPI_BYTE, r, kHeartbeatTag, comm_, &request) == MPI_SUCCESS) {
            MPI_Request_free(&request);
          }
        }
      }
    });
    auto stop_heartbeat = [&] {
      {
        std::lock_guard<std::mutex> lock(mutex);
        finished = true;
      }
      wake.notify_all();
      heartbeat.join();
    };
    try {
      flag = work() || flag;
    } catch (...) {
      stop_heartbeat();
      throw;
    }
    stop_heartbeat();
    return AnyTrue(flag);
  }
  const auto start = Clock::now();
  int value = flag ? 1 : 0;
  MPI_Request agreed;
  ThrowIfMpiError(MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, comm_, &agreed),
                  "MPI_Iallreduce (any-true)");
  char beat = 0;
  MPI_Request heard;
  ThrowIfMpiError(MPI_Irecv(&beat, 1, MPI_BYTE, 0, kHeartbeatTag, comm_, &heard), "MPI_Irecv");
  CommWaitDeadline deadline("any-true after rank 0's work");
  while (true) {
    int done = 0;
    ThrowIfMpiError(MPI_Test(&agreed, &done, MPI_STATUS_IGNORE), "MPI_Test (any-true)");
    if (done) break;
    int alive = 0;
    ThrowIfMpiError(MPI_Test(&heard, &alive, MPI_STATUS_IGNORE), "MPI_Test (heartbeat)");
    if (alive) {
      deadline.Restart();
      ThrowIfMpiError(MPI_Irecv(&beat, 1, MPI_BYTE, 0, kHeartbeatTag, comm_, &heard), "MPI_Irecv");
    }
    if (deadline.Due()) deadline.Report("0");
    // Idle while rank 0 works: a short sleep costs nothing here.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // A heartbeat still in flight is matched by the next wait's receive, where it only
  // restarts a clock.
  MPI_Cancel(&heard);
  MPI_Wait(&heard, MPI_STATUS_IGNORE);
  Record("anytrue", 0, SecondsSince(start));
  return value != 0;
}

}  // namespace caffe

#endif  // USE_MPI
