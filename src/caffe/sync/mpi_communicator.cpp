// MPI communicator: our ring all-reduce on MPI point-to-point next to MPI's own
// collectives, with MPI's int counts lifted to int64 by splitting.
#include <glog/logging.h>

#include "caffe/sync/mpi_communicator.hpp"

#ifdef USE_MPI

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

#include <unistd.h>

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
      ThrowIfMpiError(MPI_Sendrecv(data + send_begin, send_length, MPI_FLOAT, right, kRingTag,
                                   scratch_.data(), recv_length, MPI_FLOAT, left, kRingTag,
                                   comm_, MPI_STATUS_IGNORE),
                      "all-reduce (ring reduce-scatter)");
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
      ThrowIfMpiError(MPI_Sendrecv(data + send_begin, send_length, MPI_FLOAT, right, kRingTag,
                                   data + recv_begin, recv_length, MPI_FLOAT, left, kRingTag,
                                   comm_, MPI_STATUS_IGNORE),
                      "all-reduce (ring all-gather)");
      elements_sent += send_length;
    }
  }
  DCHECK_EQ(elements_sent * static_cast<int64_t>(sizeof(float)),
            RingAllReduceBytesSent(count, n, rank_));
}

void MpiCommunicator::RingAllReduceHalf(float* data, int64_t count, float* rounding_error) {
  const int n = size_;
  const int right = Mod(rank_ + 1, n);
  const int left = Mod(rank_ - 1, n);
  // The float ring's chunks and pieces, so that its byte counter applies at 2 bytes.
  const int64_t pieces = RingPieces(count);
  auto piece = [&](int chunk, int64_t j, int64_t* begin, int* length) {
    RingPiece(count, n, pieces, chunk, j, begin, length);
  };
  half_wire_.resize(count);
  half_scratch_.resize(std::max<size_t>(half_scratch_.size(), RingPieceCapacity(count, pieces)));
  // data[i] becomes what travels of it; the difference is this rank's rounding.
  auto round = [&](int64_t begin, int length) {
    for (int64_t i = begin; i < begin + length; ++i) {
      half_wire_[i] = FloatToHalf(data[i]);
      const float arrives = HalfToFloat(half_wire_[i]);
      rounding_error[i] += data[i] - arrives;
      data[i] = arrives;
    }
  };
  // Reduce-scatter as in RingAllReduce, each partial sum rounded as it leaves.
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ - step, n);
    const int recv_chunk = Mod(rank_ - step - 1, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      round(send_begin, send_length);
      ThrowIfMpiError(MPI_Sendrecv(half_wire_.data() + send_begin, send_length, MPI_UINT16_T, right,
                                   kRingTag, half_scratch_.data(), recv_length, MPI_UINT16_T, left,
                                   kRingTag, comm_, MPI_STATUS_IGNORE),
                      "all-reduce fp16 (ring reduce-scatter)");
      for (int i = 0; i < recv_length; ++i) data[recv_begin + i] += HalfToFloat(half_scratch_[i]);
    }
  }
  // The finished sum of the owned chunk is rounded once more, then travels around.
  const int owned = Mod(rank_ + 1, n);
  for (int64_t j = 0; j < pieces; ++j) {
    int64_t begin;
    int length;
    piece(owned, j, &begin, &length);
    round(begin, length);
  }
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = Mod(rank_ + 1 - step, n);
    const int recv_chunk = Mod(rank_ - step, n);
    for (int64_t j = 0; j < pieces; ++j) {
      int64_t send_begin, recv_begin;
      int send_length, recv_length;
      piece(send_chunk, j, &send_begin, &send_length);
      piece(recv_chunk, j, &recv_begin, &recv_length);
      ThrowIfMpiError(MPI_Sendrecv(half_wire_.data() + send_begin, send_length, MPI_UINT16_T, right,
                                   kRingTag, half_wire_.data() + recv_begin, recv_length,
                                   MPI_UINT16_T, left, kRingTag, comm_, MPI_STATUS_IGNORE),
                      "all-reduce fp16 (ring all-gather)");
      for (int i = 0; i < recv_length; ++i) data[recv_begin + i] = HalfToFloat(half_wire_[recv_begin + i]);
    }
  }
}

void MpiCommunicator::AllReduceSumHalf(float* data, int64_t count, float* rounding_error) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumHalf: negative count " << count;
  const auto start = Clock::now();
  if (size_ > 1 && count > 0) RingAllReduceHalf(data, count, rounding_error);
  // One rank: nothing travels, nothing is rounded.
  Record("allreduce", RingAllReduceBytesSent(count, size_, rank_) / 2, SecondsSince(start));
}

void MpiCommunicator::NativeAllReduce(float* data, int64_t count) {
  for (int64_t begin = 0; begin < count; begin += max_count_per_call_) {
    const int length = static_cast<int>(std::min(max_count_per_call_, count - begin));
    ThrowIfMpiError(
        MPI_Allreduce(MPI_IN_PLACE, data + begin, length, MPI_FLOAT, MPI_SUM, comm_),
        "MPI_Allreduce");
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
    ThrowIfMpiError(MPI_Bcast(buffer + begin, length, MPI_BYTE, root, comm_), "MPI_Bcast");
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
    ThrowIfMpiError(MPI_Allgather(in_place ? MPI_IN_PLACE : in, length, type, out, length,
                                  type, comm_),
                    "MPI_Allgather");
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
    ThrowIfMpiError(MPI_Allgather(in_place ? MPI_IN_PLACE : send, length, type,
                                  out_bytes + begin * elem_size, 1, strided.type, comm_),
                    "MPI_Allgather");
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
    ThrowIfMpiError(MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, static_cast<int>(mine),
                                   MPI_FLOAT, out, int_counts.data(), int_displs.data(),
                                   MPI_FLOAT, comm_),
                    "MPI_Allgatherv");
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
    ThrowIfMpiError(MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                                MPI_STATUSES_IGNORE),
                    "MPI_Waitall (all-gather-v)");
  }
  Record("allgatherv", (size_ - 1) * mine * static_cast<int64_t>(sizeof(float)),
         SecondsSince(start));
}

void MpiCommunicator::Barrier() {
  const auto start = Clock::now();
  ThrowIfMpiError(MPI_Barrier(comm_), "MPI_Barrier");
  Record("barrier", 0, SecondsSince(start));
}

bool MpiCommunicator::AnyTrue(bool flag) {
  const auto start = Clock::now();
  int value = flag ? 1 : 0;
  ThrowIfMpiError(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, comm_),
                  "MPI_Allreduce (any-true)");
  Record("anytrue", 0, SecondsSince(start));
  return value != 0;
}

}  // namespace caffe

#endif  // USE_MPI
