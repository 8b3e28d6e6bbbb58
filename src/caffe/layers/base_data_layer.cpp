#include "caffe/layers/base_data_layer.hpp"

#include <algorithm>

namespace caffe {

#ifndef USE_CUDA
// CPU-only builds have no device: Layer's GPU fallback runs the host path.
BasePrefetchingDataLayer::DeviceUploader::DeviceUploader(int device) : device_(device) {}
BasePrefetchingDataLayer::DeviceUploader::~DeviceUploader() = default;
void BasePrefetchingDataLayer::DeviceUploader::Upload(Batch*, bool) {}
#endif

BasePrefetchingDataLayer::~BasePrefetchingDataLayer() { StopPrefetching(); }

void BasePrefetchingDataLayer::LayerSetUp(const vector<Blob*>& bottom,
                                          const vector<Blob*>& top) {
  CHECK(!thread_.joinable()) << "data layer set up twice";
  const uint32_t prefetch = layer_param_.data_param().prefetch();
  LAYER_REQUIRE(prefetch > 0) << "data_param.prefetch must be at least 1, found " << prefetch;
  output_labels_ = top.size() == 2;
  rng_.seed(context().rng()());
  transformer_ = std::make_unique<DataTransformer>(transform_param(), phase_, rng_);
  batches_.clear();
  for (uint32_t i = 0; i < prefetch; ++i) batches_.push_back(std::make_unique<Batch>());
  DataLayerSetUp(top);
  free_.clear();
  full_.clear();
  for (auto& batch : batches_) free_.push_back(batch.get());
  stop_ = false;
  error_ = nullptr;
  // Read on the caller's thread: the prefetch thread must not touch the context.
  upload_device_ = context().mode() == Mode::GPU ? context().device_id() : -1;
  thread_ = std::thread(&BasePrefetchingDataLayer::PrefetchLoop, this);
}

void BasePrefetchingDataLayer::ShapeTopsAndBatches(const vector<Blob*>& top,
                                                   const vector<int64_t>& data_shape,
                                                   const vector<int64_t>& label_shape) {
  top[0]->Reshape(data_shape);
  if (output_labels_) top[1]->Reshape(label_shape);
  for (auto& batch : batches_) {
    batch->data.Reshape(data_shape);
    batch->data.mutable_cpu_data();  // allocate here rather than on the thread
    if (output_labels_) {
      batch->label.Reshape(label_shape);
      batch->label.mutable_cpu_data();
    }
  }
}

void BasePrefetchingDataLayer::StopPrefetching() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  free_cv_.notify_all();
  thread_.join();
}

void BasePrefetchingDataLayer::PrefetchLoop() {
  DeviceUploader uploader(upload_device_);
  while (true) {
    Batch* batch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      free_cv_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) return;
      batch = free_.front();
      free_.pop_front();
    }
    try {
      LoadBatch(batch);
      uploader.Upload(batch, output_labels_);
    } catch (...) {
      // Whatever LoadBatch throws reaches the consumer; letting it escape would
      // call std::terminate.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      full_cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      full_.push_back(batch);
    }
    full_cv_.notify_one();
  }
}

void BasePrefetchingDataLayer::RethrowPrefetchError() {
  try {
    std::rethrow_exception(error_);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    Fail() << "reading data failed: " << e.what();
  } catch (...) {
    Fail() << "reading data failed with an unknown exception";
  }
  // Unreachable: every branch above throws.
  throw Error("reading data failed");
}

Batch* BasePrefetchingDataLayer::TakeFullBatch() {
  CHECK(thread_.joinable() || error_) << "data layer used before SetUp";
  std::unique_lock<std::mutex> lock(mutex_);
  // Batches loaded before a failure are still delivered, in order.
  full_cv_.wait(lock, [this] { return !full_.empty() || error_ != nullptr; });
  if (full_.empty()) RethrowPrefetchError();
  Batch* batch = full_.front();
  full_.pop_front();
  return batch;
}

void BasePrefetchingDataLayer::ReturnBatch(Batch* batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(batch);
  }
  free_cv_.notify_one();
}

void BasePrefetchingDataLayer::Forward_cpu(const vector<Blob*>& bottom,
                                           const vector<Blob*>& top) {
  Batch* batch = TakeFullBatch();
  top[0]->ReshapeLike(batch->data);
  std::copy_n(batch->data.cpu_data(), batch->data.count(), top[0]->mutable_cpu_data());
  if (output_labels_) {
    top[1]->ReshapeLike(batch->label);
    std::copy_n(batch->label.cpu_data(), batch->label.count(), top[1]->mutable_cpu_data());
  }
  ReturnBatch(batch);
}

}  // namespace caffe
