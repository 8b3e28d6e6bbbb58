// Single-rank communicator: identities and copies, calls counted, zero bytes sent.
#include "caffe/sync/local_communicator.hpp"

#include <cstring>

#include "caffe/util/error.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

LocalCommunicator::LocalCommunicator() {
  // With a GPU present the gather buffers may be device memory; cudaMemcpyDefault
  // handles both kinds through unified addressing. Without a driver it would fail,
  // so plain memcpy is used there.
  use_cuda_copy_ = HasCudaDevice();
}

void LocalCommunicator::Copy(const void* in, int64_t bytes, void* out) const {
  if (bytes == 0 || in == out) return;
#ifdef USE_CUDA
  if (use_cuda_copy_) {
    CUDA_CHECK(cudaMemcpy(out, in, bytes, cudaMemcpyDefault));
    return;
  }
#endif
  std::memmove(out, in, bytes);
}

// Calls are still counted so that summaries read the same with one rank or many.
void LocalCommunicator::Record(const char* op) { ++stats_.by_op[op].calls; }

void LocalCommunicator::AllReduceSum(float* data, int64_t count) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSum: negative count " << count;
  Record("allreduce");
}

void LocalCommunicator::AllReduceSumHalf(float* data, int64_t count, float* rounding_error) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumHalf: negative count " << count;
  Record("allreduce");
}

void LocalCommunicator::AllReduceSumInt8(float* data, int64_t count, float* rounding_error) {
  CAFFE_REQUIRE(count >= 0) << "AllReduceSumInt8: negative count " << count;
  Record("allreduce");
}

void LocalCommunicator::Broadcast(void* data, int64_t bytes, int root) {
  CAFFE_REQUIRE(bytes >= 0) << "Broadcast: negative byte count " << bytes;
  CAFFE_REQUIRE(root == 0) << "Broadcast: root " << root << " is not a rank of a 1-rank job";
  Record("broadcast");
}

void LocalCommunicator::AllGather(const float* in, int64_t count, float* out) {
  CAFFE_REQUIRE(count >= 0) << "AllGather: negative count " << count;
  Copy(in, count * static_cast<int64_t>(sizeof(float)), out);
  Record("allgather");
}

void LocalCommunicator::AllGatherBytes(const void* in, int64_t bytes, void* out) {
  CAFFE_REQUIRE(bytes >= 0) << "AllGatherBytes: negative byte count " << bytes;
  Copy(in, bytes, out);
  Record("allgather");
}

void LocalCommunicator::AllGatherV(const float* in, const std::vector<int64_t>& counts,
                                   float* out) {
  CAFFE_REQUIRE(counts.size() == 1)
      << "AllGatherV: expected 1 count (one rank), got " << counts.size();
  CAFFE_REQUIRE(counts[0] >= 0) << "AllGatherV: negative count " << counts[0];
  Copy(in, counts[0] * static_cast<int64_t>(sizeof(float)), out);
  Record("allgatherv");
}

void LocalCommunicator::Barrier() { Record("barrier"); }

bool LocalCommunicator::AnyTrue(bool flag) {
  Record("anytrue");
  return flag;
}

}  // namespace caffe
