#include "caffe/layers/memory_data_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"

namespace caffe {

void MemoryDataLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const MemoryDataParameter& p = layer_param_.memory_data_param();
  LAYER_REQUIRE(p.batch_size() > 0 && p.channels() > 0 && p.height() > 0 && p.width() > 0)
      << "memory_data_param needs positive batch_size, channels, height and width, found "
      << p.batch_size() << ", " << p.channels() << ", " << p.height() << ", " << p.width();
  batch_size_ = static_cast<int>(p.batch_size());
  channels_ = p.channels();
  height_ = p.height();
  width_ = p.width();
}

void MemoryDataLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  top[0]->Reshape(batch_size_, channels_, height_, width_);
  top[1]->Reshape(vector<int64_t>{batch_size_});
}

void MemoryDataLayer::Reset(const float* data, const float* labels, int64_t num) {
  LAYER_REQUIRE(num > 0 && num % batch_size_ == 0)
      << "expected a positive multiple of the batch size " << batch_size_
      << " examples, found " << num;
  ResizeScratch(&data_, num * example_size(), "the examples");
  ResizeScratch(&labels_, num, "the labels");
  std::copy(data, data + data_.size(), data_.begin());
  std::copy(labels, labels + num, labels_.begin());
  position_ = 0;
}

void MemoryDataLayer::set_batch_size(int batch_size) {
  LAYER_REQUIRE(batch_size > 0) << "batch size must be positive, found " << batch_size;
  LAYER_REQUIRE(labels_.empty() || num_examples() % batch_size == 0)
      << "batch size " << batch_size << " does not divide the " << num_examples()
      << " examples held";
  batch_size_ = batch_size;
  position_ = 0;
}

void MemoryDataLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(!labels_.empty())
      << "no examples to serve: hand them over first (Net.set_input_arrays in Python)";
  const int64_t size = example_size();
  std::copy(data_.begin() + position_ * size, data_.begin() + (position_ + batch_size_) * size,
            top[0]->mutable_cpu_data());
  std::copy(labels_.begin() + position_, labels_.begin() + position_ + batch_size_,
            top[1]->mutable_cpu_data());
  position_ = (position_ + batch_size_) % num_examples();
}

REGISTER_LAYER_CLASS(MemoryData);

}  // namespace caffe
