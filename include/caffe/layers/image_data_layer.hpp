// ImageData: reads the images named in a list file ("<path> <label>" per line, the
// path relative to root_folder), optionally resized to new_height x new_width and
// shuffled each epoch, and emits transformed batches and labels. Images in one batch
// must share a size; without resizing, a batch takes its first image's size.
#ifndef CAFFE_LAYERS_IMAGE_DATA_LAYER_HPP_
#define CAFFE_LAYERS_IMAGE_DATA_LAYER_HPP_

#include <string>
#include <vector>

#include "caffe/layers/base_data_layer.hpp"

namespace caffe {

class ImageDataLayer : public BasePrefetchingDataLayer {
 public:
  explicit ImageDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer(param) {}
  ~ImageDataLayer() override { StopPrefetching(); }
  const char* type() const override { return "ImageData"; }

 protected:
  void DataLayerSetUp(const vector<Blob*>& top) override;
  void LoadBatch(Batch* batch) override;
  TransformationParameter transform_param() const override {
    return FoldLegacyTransformParams(layer_param_.transform_param(),
                                     layer_param_.image_data_param());
  }

 private:
  struct Entry {
    string path;  // as written in the list
    int label;
    int line;     // 1-based line in the list file, for messages
  };
  void ReadList();
  void Advance();  // next entry; reshuffles at the end of an epoch when asked to

  string source_;
  vector<Entry> entries_;
  size_t position_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_IMAGE_DATA_LAYER_HPP_
