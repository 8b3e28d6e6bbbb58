// Serves batches from arrays the caller hands over with Reset (pycaffe's
// Net.set_input_arrays): tops are data (batch, channels, height, width) and label
// (batch). Each Forward takes the next batch, wrapping around at the end, so a net can
// run over an in-memory data set without a database.
#ifndef CAFFE_LAYERS_MEMORY_DATA_LAYER_HPP_
#define CAFFE_LAYERS_MEMORY_DATA_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class MemoryDataLayer : public Layer {
 public:
  explicit MemoryDataLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "MemoryData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }

  // Copies `num` examples (data: num x channels x height x width, labels: num) in;
  // `num` must be a positive multiple of the batch size. The next Forward serves
  // the first batch.
  void Reset(const float* data, const float* labels, int64_t num);
  // Serving resumes from the first example.
  void set_batch_size(int batch_size);
  int batch_size() const { return batch_size_; }
  int64_t channels() const { return channels_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t num_examples() const { return static_cast<int64_t>(labels_.size()); }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}

 private:
  int64_t example_size() const { return channels_ * height_ * width_; }

  int batch_size_ = 0;
  int64_t channels_ = 0, height_ = 0, width_ = 0;
  vector<float> data_;
  vector<float> labels_;
  int64_t position_ = 0;  // first example of the next batch
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_MEMORY_DATA_LAYER_HPP_
