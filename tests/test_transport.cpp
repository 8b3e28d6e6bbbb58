// The Transport the tool hands to the exchange: its checks, CreateTransport on one
// rank, the default asynchronous all-reduce, and that an exchange in CPU mode gives
// the device communicator nothing (a host pointer there would be a crash on a GPU).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "caffe/sync/transport.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Rank 0 of `size` ranks that takes `memory` buffers and records what it is asked to
// do. Sums and broadcasts leave the data as it is, as if every other rank held zeros
// or this rank's copy.
class RecordingCommunicator : public Communicator {
 public:
  RecordingCommunicator(BufferMemory memory, int size) : memory_(memory), size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  int local_rank() const override { return 0; }
  int local_size() const override { return size_; }
  std::string backend() const override { return "recording"; }
  BufferMemory memory() const override { return memory_; }
  void AllReduceSum(float* data, int64_t count) override { Note("allreduce", data); }
  void Broadcast(void* data, int64_t bytes, int root) override { Note("broadcast", data); }
  void AllGather(const float* in, int64_t count, float* out) override { Note("allgather", in); }
  void AllGatherBytes(const void* in, int64_t bytes, void* out) override {
    Note("allgather", in);
  }
  void AllGatherV(const float* in, const std::vector<int64_t>& counts, float* out) override {
    Note("allgatherv", in);
  }
  void Barrier() override { Note("barrier", nullptr); }
  bool AnyTrue(bool flag) override {
    Note("anytrue", nullptr);
    return flag;
  }

  std::vector<std::string> ops;
  std::vector<const void*> buffers;

 private:
  void Note(const char* op, const void* buffer) {
    ops.push_back(op);
    buffers.push_back(buffer);
    ++stats_.by_op[op].calls;
  }
  BufferMemory memory_;
  int size_;
};

TEST(TransportTest, ChecksEachCommunicatorsMemoryAndRanks) {
  auto local = std::make_shared<LocalCommunicator>();
  EXPECT_NE(ErrorOf([] { Transport t(nullptr); }).find("no host communicator"), std::string::npos);
  auto device_one = std::make_shared<RecordingCommunicator>(BufferMemory::DEVICE, 1);
  EXPECT_NE(ErrorOf([&] { Transport t(device_one); })
                .find("the host communicator (recording) takes device buffers"),
            std::string::npos);
  auto host_one = std::make_shared<RecordingCommunicator>(BufferMemory::HOST, 1);
  EXPECT_NE(ErrorOf([&] { Transport t(local, host_one); })
                .find("the device communicator (recording) takes host buffers"),
            std::string::npos);
  auto device_two = std::make_shared<RecordingCommunicator>(BufferMemory::DEVICE, 2);
  EXPECT_NE(ErrorOf([&] { Transport t(local, device_two); })
                .find("the device communicator is rank 0 of 2, the host one rank 0 of 1"),
            std::string::npos);
  Transport both(local, device_one);
  EXPECT_EQ(both.host, local);
  EXPECT_EQ(both.device, device_one);
}

TEST(TransportTest, OneRankNeedsNoDeviceCommunicator) {
  auto local = std::make_shared<LocalCommunicator>();
  for (bool gpu_mode : {false, true}) {
    Transport transport = CreateTransport(local, gpu_mode);
    EXPECT_EQ(transport.host, local);
    EXPECT_EQ(transport.device, nullptr) << "gpu_mode " << gpu_mode;
  }
  EXPECT_NE(ErrorOf([] { CreateTransport(nullptr, false); }).find("no host communicator"),
            std::string::npos);
}

TEST(TransportTest, HostCommunicatorsFinishAsyncSumsAtOnce) {
  LocalCommunicator local;
  EXPECT_EQ(local.memory(), BufferMemory::HOST);
  std::vector<float> data = {1.f, 2.f};
  local.AllReduceSumAsync(data.data(), 2, nullptr);
  local.Wait(nullptr, "test");
  EXPECT_EQ(data, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(local.stats().by_op.at("allreduce").calls, 1) << "counted like AllReduceSum";
}

TEST(TransportTest, CpuModeExchangesNeverTouchTheDeviceCommunicator) {
  for (auto method : {SyncParameter::DENSE, SyncParameter::IWP, SyncParameter::TOPK_ALLGATHER,
                      SyncParameter::RANDOMK}) {
    auto host = std::make_shared<RecordingCommunicator>(BufferMemory::HOST, 2);
    auto device = std::make_shared<RecordingCommunicator>(BufferMemory::DEVICE, 2);
    SyncParameter sync;
    sync.set_method(method);
    auto exchange = CreateGradientExchange(sync, Transport(host, device));
    Blob a(vector<int64_t>{3}), b(vector<int64_t>{2});
    for (Blob* blob : {&a, &b}) {
      for (int i = 0; i < blob->count(); ++i) {
        blob->mutable_cpu_data()[i] = 1.f + i;
        blob->mutable_cpu_diff()[i] = 0.5f * i;
      }
    }
    const vector<Blob*> params = {&a, &b};
    exchange->BroadcastInitialWeights(params);
    ASSERT_EQ(host->ops.size(), 2u) << SyncParameter::Method_Name(method);
    EXPECT_EQ(host->ops[0], "broadcast");
    EXPECT_EQ(host->buffers[0], a.cpu_data()) << "host data in CPU mode";
    EXPECT_EQ(host->buffers[1], b.cpu_data());
    exchange->Exchange(0, params);
    EXPECT_GT(host->ops.size(), 2u) << SyncParameter::Method_Name(method);
    EXPECT_TRUE(device->ops.empty()) << SyncParameter::Method_Name(method) << ": "
                                     << device->ops.size() << " call(s), the first "
                                     << device->ops[0];
  }
}

}  // namespace
}  // namespace caffe
