// The DENSE exchange's bucket reducer on the device (see bucket_reducer.hpp): packs a
// bucket's gradient pieces into a device buffer, all-reduces it with the device
// communicator (NCCL) and writes the average back, all on a non-blocking stream of
// its own. The layers run on the
// legacy default stream; a blocking stream would be serialized against it in both
// directions and nothing would overlap, so ordering comes from an event recorded on
// the default stream when Start is called (after the bucket's layers were queued).
#ifdef USE_CUDA

#include <chrono>
#include <memory>
#include <vector>

#include "caffe/sync/bucket_reducer.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

namespace {

__global__ void ScaleKernel(long long n, float alpha, float* x) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    x[i] *= alpha;
  }
}


class DeviceBucketReducer : public BucketReducer {
 public:
  DeviceBucketReducer(Communicator* device, Communicator* control, ExchangeStats* stats)
      : device_(device), control_(control), stats_(stats) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&backward_done_, cudaEventDisableTiming));
  }
  ~DeviceBucketReducer() override {
    if (buffer_ != nullptr) cudaFree(buffer_);
    cudaEventDestroy(backward_done_);
    cudaStreamDestroy(stream_);
  }

  void Start(const Bucket& bucket, const std::vector<Blob*>& params) override {
    if (bucket.elements == 0) return;
    // One buffer per bucket: the stream runs buckets one after another, but a buffer
    // must not be repacked while an earlier bucket's unpack may still read it, and
    // per-bucket buffers make that impossible without extra events.
    float* buffer = BufferFor(started_++, bucket.elements);
    // mutable_gpu_diff first moves a diff that a CPU layer produced to the device, with
    // a copy on the default stream that may still be in flight when it returns; the
    // event is recorded after those copies so the packing below waits for them too.
    std::vector<float*> diffs;
    diffs.reserve(bucket.pieces.size());
    for (const BucketPiece& piece : bucket.pieces) {
      diffs.push_back(params[piece.param]->mutable_gpu_diff() + piece.start);
    }
    CUDA_CHECK(cudaEventRecord(backward_done_, cudaStreamLegacy));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, backward_done_, 0));
    int64_t pos = 0;
    for (size_t i = 0; i < bucket.pieces.size(); ++i) {
      CUDA_CHECK(cudaMemcpyAsync(buffer + pos, diffs[i], bucket.pieces[i].length * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream_));
      pos += bucket.pieces[i].length;
    }
    const int64_t bytes_before = device_->stats().total_bytes_sent();
    device_->AllReduceSumAsync(buffer, bucket.elements, stream_);
    RecordBytes(device_->stats().total_bytes_sent() - bytes_before);
    ScaleKernel<<<CudaGridBlocks(bucket.elements), kCudaThreads, 0, stream_>>>(
        bucket.elements, 1.f / device_->size(), buffer);
    CUDA_CHECK(cudaGetLastError());
    pos = 0;
    for (size_t i = 0; i < bucket.pieces.size(); ++i) {
      CUDA_CHECK(cudaMemcpyAsync(diffs[i], buffer + pos, bucket.pieces[i].length * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream_));
      pos += bucket.pieces[i].length;
    }
  }

  void Finish() override {
    // The time counted is what backward did not hide: the wait after the last layer.
    const auto start = std::chrono::steady_clock::now();
    device_->Wait(stream_, "allreduce (DENSE buckets)");
    stats_->AddTime(ExchangeStats::ALLREDUCE,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    started_ = 0;
  }

 private:
  float* BufferFor(size_t index, int64_t elements) {
    if (index >= sizes_.size()) {
      sizes_.resize(index + 1, 0);
      offsets_.resize(index + 1, 0);
    }
    if (sizes_[index] != elements) {
      // Plans do not change between steps, so this runs in the first step only.
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      sizes_[index] = elements;
      int64_t total = 0;
      for (size_t i = 0; i < sizes_.size(); ++i) {
        offsets_[i] = total;
        total += sizes_[i];
      }
      if (total > capacity_) {
        if (buffer_ != nullptr) CUDA_CHECK(cudaFree(buffer_));
        CUDA_CHECK(cudaMalloc(&buffer_, total * sizeof(float)));
        capacity_ = total;
      }
    }
    return buffer_ + offsets_[index];
  }

  // The device communicator's bytes go into the control communicator's counters,
  // where the exchange reads what this rank sent.
  void RecordBytes(int64_t bytes) {
    CommStats::Entry& entry = control_->mutable_stats().by_op["allreduce_device"];
    ++entry.calls;
    entry.bytes_sent += bytes;
  }

  Communicator* device_;
  Communicator* control_;
  ExchangeStats* stats_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t backward_done_ = nullptr;
  float* buffer_ = nullptr;
  int64_t capacity_ = 0;
  std::vector<int64_t> sizes_, offsets_;
  size_t started_ = 0;
};

}  // namespace

std::unique_ptr<BucketReducer> CreateDeviceBucketReducer(Communicator* device,
                                                         Communicator* control,
                                                         ExchangeStats* stats) {
  CHECK(device != nullptr && device->memory() == BufferMemory::DEVICE);
  return std::make_unique<DeviceBucketReducer>(device, control, stats);
}

}  // namespace caffe

#endif  // USE_CUDA
