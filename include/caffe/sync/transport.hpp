// The communicators one training process talks through, made once where the process
// starts (the `caffe` tool calls CreateTransport) and handed to the gradient exchange,
// which never builds one of its own or asks which backend it has:
//   host    collectives on host buffers: MPI across ranks, the local one alone. Also
//           the control plane (stop and snapshot agreement, barriers).
//   device  collectives on device buffers (NCCL), or null: device data then travels
//           through host memory and `host`.
#ifndef CAFFE_SYNC_TRANSPORT_HPP_
#define CAFFE_SYNC_TRANSPORT_HPP_

#include <memory>

#include "caffe/sync/communicator.hpp"

namespace caffe {

struct Transport {
  // Checks that `host` takes host buffers and `device`, when given, device buffers
  // over the same ranks (caffe::Error otherwise).
  Transport(std::shared_ptr<Communicator> host_comm,
            std::shared_ptr<Communicator> device_comm = nullptr);

  std::shared_ptr<Communicator> host;
  std::shared_ptr<Communicator> device;
};

// `host` and, when every rank trains on a GPU of its own and NCCL is built in, an NCCL
// communicator on the current device (call after the device is chosen). Collective
// over `host`: every rank calls it at the same point, whatever its own mode. Ranks
// that share a GPU (NCCL refuses them) or a rank in CPU mode leave `device` null,
// with a warning from rank 0 in the first case.
Transport CreateTransport(std::shared_ptr<Communicator> host, bool gpu_mode);

}  // namespace caffe

#endif  // CAFFE_SYNC_TRANSPORT_HPP_
