// Base of the data layers: a background thread fills a ring of `prefetch` batches
// (data_param.prefetch, default 4) while the net computes, and Forward hands out
// the oldest full one. An exception on the thread is kept and rethrown from Forward
// as a caffe::Error, so bad records never terminate the process.
// Data layers take no bottoms, produce data and an optional label, and have no
// backward pass.
#ifndef CAFFE_LAYERS_BASE_DATA_LAYER_HPP_
#define CAFFE_LAYERS_BASE_DATA_LAYER_HPP_

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "caffe/data/data_transformer.hpp"
#include "caffe/layer.hpp"

namespace caffe {

struct Batch {
  Blob data;
  Blob label;
};

// Caffe's per-layer transform fields (scale, mean_file, crop_size, mirror in
// data_param / image_data_param) override transform_param when set.
template <typename LegacyParam>
TransformationParameter FoldLegacyTransformParams(TransformationParameter transform,
                                                  const LegacyParam& legacy) {
  if (legacy.has_scale()) transform.set_scale(legacy.scale());
  if (legacy.has_mean_file()) transform.set_mean_file(legacy.mean_file());
  if (legacy.has_crop_size()) transform.set_crop_size(legacy.crop_size());
  if (legacy.has_mirror()) transform.set_mirror(legacy.mirror());
  return transform;
}

class BasePrefetchingDataLayer : public Layer {
 public:
  explicit BasePrefetchingDataLayer(const LayerParameter& param) : Layer(param) {}
  ~BasePrefetchingDataLayer() override;

  // Builds the transformer, runs DataLayerSetUp, then starts the prefetch thread.
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) final;
  // Tops take each batch's shape in Forward.
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}

  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }

 protected:
  // Opens the source and shapes tops and batches (ShapeTopsAndBatches), on the
  // caller's thread before prefetching starts.
  virtual void DataLayerSetUp(const vector<Blob*>& top) = 0;
  // Fills one batch; runs on the prefetch thread, so it may use rng_ and the layer's
  // own reader state but nothing shared with the net (not context().rng()).
  virtual void LoadBatch(Batch* batch) = 0;
  virtual TransformationParameter transform_param() const {
    return layer_param_.transform_param();
  }

  void ShapeTopsAndBatches(const vector<Blob*>& top, const vector<int64_t>& data_shape,
                           const vector<int64_t>& label_shape);
  // Every derived destructor calls this first: the thread calls LoadBatch, which
  // must not run once the derived part is being destroyed.
  void StopPrefetching();

  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
#ifdef USE_CUDA
  // Copies the prefetched batch, already on the device, into the tops.
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
#endif
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}

  bool output_labels_ = false;
  // The prefetch thread's random stream (crops, mirrors, shuffles), seeded from the
  // context at setup so runs repeat without racing the net for context().rng().
  std::mt19937_64 rng_;
  std::unique_ptr<DataTransformer> transformer_;

 private:
  // In GPU mode the prefetch thread also uploads each batch, on its own stream, so
  // the copy overlaps the net's work instead of stalling the next Forward.
  class DeviceUploader {
   public:
    explicit DeviceUploader(int device);  // device < 0: host only, no uploads
    ~DeviceUploader();
    void Upload(Batch* batch, bool with_labels);

   private:
    int device_;
    void* stream_ = nullptr;  // cudaStream_t in CUDA builds
  };

  // The oldest full batch (waits for one; rethrows the prefetch thread's error),
  // and back to the thread once its contents are copied out.
  Batch* TakeFullBatch();
  void ReturnBatch(Batch* batch);
  void PrefetchLoop();
  [[noreturn]] void RethrowPrefetchError();

  vector<std::unique_ptr<Batch>> batches_;
  std::deque<Batch*> free_;  // waiting to be filled by the thread
  std::deque<Batch*> full_;  // waiting to be consumed by Forward, oldest first
  std::mutex mutex_;
  std::condition_variable free_cv_;
  std::condition_variable full_cv_;
  bool stop_ = false;
  std::exception_ptr error_;  // set once; the thread exits after it
  int upload_device_ = -1;     // the device batches go to; -1 in CPU mode
  std::thread thread_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_BASE_DATA_LAYER_HPP_
