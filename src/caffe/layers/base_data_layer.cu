// The GPU side of the prefetching data layers: uploads on the prefetch thread's own
// stream, and a device-to-device copy into the tops in Forward.
#include "caffe/layers/base_data_layer.hpp"
#include "caffe/util/device_alternate.hpp"

namespace caffe {

BasePrefetchingDataLayer::DeviceUploader::DeviceUploader(int device) : device_(device) {
  if (device_ < 0) return;
  // The device is per host thread in CUDA; this thread has not chosen one yet.
  CUDA_CHECK(cudaSetDevice(device_));
  cudaStream_t stream;
  // Non-blocking: the upload must not wait for, or hold up, the legacy default
  // stream that the layers' kernels run on.
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
}

BasePrefetchingDataLayer::DeviceUploader::~DeviceUploader() {
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void BasePrefetchingDataLayer::DeviceUploader::Upload(Batch* batch, bool with_labels) {
  if (device_ < 0) return;
  auto stream = static_cast<cudaStream_t>(stream_);
  batch->data.data()->AsyncGpuPush(stream);
  if (with_labels) batch->label.data()->AsyncGpuPush(stream);
  // The batch is handed to Forward only once its device copy is complete.
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void BasePrefetchingDataLayer::Forward_gpu(const vector<Blob*>& bottom,
                                           const vector<Blob*>& top) {
  Batch* batch = TakeFullBatch();
  top[0]->ReshapeLike(batch->data);
  CUDA_CHECK(cudaMemcpyAsync(top[0]->mutable_gpu_data(), batch->data.gpu_data(),
                             batch->data.count() * sizeof(float), cudaMemcpyDeviceToDevice,
                             cudaStreamLegacy));
  if (output_labels_) {
    top[1]->ReshapeLike(batch->label);
    CUDA_CHECK(cudaMemcpyAsync(top[1]->mutable_gpu_data(), batch->label.gpu_data(),
                               batch->label.count() * sizeof(float), cudaMemcpyDeviceToDevice,
                               cudaStreamLegacy));
  }
  // The prefetch thread refills this batch (host and device side) as soon as it is
  // returned; the copies above must have read it by then.
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  ReturnBatch(batch);
}

}  // namespace caffe
