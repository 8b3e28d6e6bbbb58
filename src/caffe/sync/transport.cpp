#include "caffe/sync/transport.hpp"

#include <glog/logging.h>

#include "caffe/util/error.hpp"
#ifdef USE_NCCL
#include <cuda_runtime.h>

#include "caffe/sync/nccl_communicator.hpp"
#include "caffe/util/device_alternate.hpp"
#endif

namespace caffe {

Transport::Transport(std::shared_ptr<Communicator> host_comm,
                     std::shared_ptr<Communicator> device_comm)
    : host(std::move(host_comm)), device(std::move(device_comm)) {
  CAFFE_REQUIRE(host != nullptr) << "transport: no host communicator";
  CAFFE_REQUIRE(host->memory() == BufferMemory::HOST)
      << "transport: the host communicator (" << host->backend() << ") takes device buffers";
  if (device == nullptr) return;
  CAFFE_REQUIRE(device->memory() == BufferMemory::DEVICE)
      << "transport: the device communicator (" << device->backend() << ") takes host buffers";
  CAFFE_REQUIRE(device->size() == host->size() && device->rank() == host->rank())
      << "transport: the device communicator is rank " << device->rank() << " of "
      << device->size() << ", the host one rank " << host->rank() << " of " << host->size();
}

Transport CreateTransport(std::shared_ptr<Communicator> host, bool gpu_mode) {
  CAFFE_REQUIRE(host != nullptr) << "transport: no host communicator";
#ifdef USE_NCCL
  if (host->size() > 1) {
    // Every rank takes part in both questions, whatever its own answer, so that the
    // collectives match even when one rank fell back to the CPU.
    const bool every_rank_on_gpu = !host->AnyTrue(!gpu_mode);
    if (every_rank_on_gpu) {
      if (EveryRankHasItsOwnGpu(host.get())) {
        int device = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        return Transport(host, std::make_shared<NcclCommunicator>(device));
      }
      if (host->rank() == 0) {
        LOG(WARNING) << "ranks share a GPU, which NCCL does not allow: gradients go through "
                        "host memory and "
                     << host->backend();
      }
    }
  }
#else
  (void)gpu_mode;
#endif
  return Transport(host);
}

}  // namespace caffe
