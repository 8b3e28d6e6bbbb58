// The communicator of a job with one rank: every collective is the identity (gathers
// copy their input to the output), and nothing goes on the wire. It lets code written
// against Communicator run unchanged without mpirun.
#ifndef CAFFE_SYNC_LOCAL_COMMUNICATOR_HPP_
#define CAFFE_SYNC_LOCAL_COMMUNICATOR_HPP_

#include <string>
#include <vector>

#include "caffe/sync/communicator.hpp"

namespace caffe {

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator();

  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  BufferMemory memory() const override { return BufferMemory::HOST; }

  void AllReduceSum(float* data, int64_t count) override;
  // One rank: nothing travels, so nothing is rounded (as over MPI with one rank).
  void AllReduceSumHalf(float* data, int64_t count, float* rounding_error) override;
  void AllReduceSumInt8(float* data, int64_t count, float* rounding_error) override;
  void Broadcast(void* data, int64_t bytes, int root) override;
  void AllGather(const float* in, int64_t count, float* out) override;
  void AllGatherBytes(const void* in, int64_t bytes, void* out) override;
  void AllGatherV(const float* in, const std::vector<int64_t>& counts, float* out) override;
  void Barrier() override;
  bool AnyTrue(bool flag) override;

 private:
  // Gathers copy; buffers may live on the host or, with a GPU, on the device.
  void Copy(const void* in, int64_t bytes, void* out) const;
  void Record(const char* op);

  bool use_cuda_copy_ = false;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_LOCAL_COMMUNICATOR_HPP_
