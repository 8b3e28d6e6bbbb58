#include "caffe/layers/image_data_layer.hpp"

#include <algorithm>
#include <fstream>

#include "caffe/data/datum_io.hpp"
#include "caffe/layer_factory.hpp"

namespace caffe {

void ImageDataLayer::ReadList() {
  std::ifstream list(source_);
  LAYER_REQUIRE(list.good()) << "cannot open image list '" << source_ << "'";
  entries_.clear();
  string line;
  int line_number = 0;
  while (std::getline(list, line)) {
    ++line_number;
    const size_t end = line.find_last_not_of(" \t\r");
    if (end == string::npos) continue;  // blank line
    line.erase(end + 1);
    // The label follows the last space, so paths may contain spaces.
    const size_t split = line.find_last_of(" \t");
    size_t parsed = 0;
    int label = 0;
    bool ok = split != string::npos && split > 0;
    if (ok) {
      try {
        label = std::stoi(line.substr(split + 1), &parsed);
        ok = parsed == line.size() - split - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    LAYER_REQUIRE(ok) << "image list '" << source_ << "' line " << line_number
                      << ": expected '<path> <label>', found '" << line << "'";
    entries_.push_back({line.substr(0, line.find_last_not_of(" \t", split) + 1), label,
                        line_number});
  }
  LAYER_REQUIRE(!entries_.empty()) << "image list '" << source_ << "' names no images";
}

void ImageDataLayer::Advance() {
  if (++position_ < entries_.size()) return;
  position_ = 0;
  if (layer_param_.image_data_param().shuffle()) {
    std::shuffle(entries_.begin(), entries_.end(), rng_);
  }
}

#ifdef USE_OPENCV

namespace {

cv::Mat ReadEntryImage(const ImageDataParameter& param, const string& path) {
  return ReadImageToCVMat(param.root_folder() + path, static_cast<int>(param.new_height()),
                          static_cast<int>(param.new_width()), param.is_color());
}

}  // namespace

void ImageDataLayer::DataLayerSetUp(const vector<Blob*>& top) {
  const ImageDataParameter& param = layer_param_.image_data_param();
  source_ = param.source();
  LAYER_REQUIRE(!source_.empty()) << "image_data_param.source is empty";
  LAYER_REQUIRE(param.batch_size() > 0) << "image_data_param.batch_size must be positive";
  LAYER_REQUIRE((param.new_height() == 0) == (param.new_width() == 0))
      << "image_data_param: give both new_height and new_width or neither, found "
      << param.new_height() << " x " << param.new_width();
  ReadList();
  if (param.shuffle()) std::shuffle(entries_.begin(), entries_.end(), rng_);
  position_ = 0;
  if (param.rand_skip() > 0) {
    position_ = context().rng()() % param.rand_skip() % entries_.size();
  }

  const Entry& first = entries_[position_];
  vector<int64_t> data_shape;
  try {
    data_shape = transformer_->InferBlobShape(ReadEntryImage(param, first.path));
  } catch (const Error& e) {
    Fail() << "image list '" << source_ << "' line " << first.line << ": " << e.what();
  }
  data_shape[0] = param.batch_size();
  ShapeTopsAndBatches(top, data_shape, {data_shape[0]});
}

void ImageDataLayer::LoadBatch(Batch* batch) {
  const ImageDataParameter& param = layer_param_.image_data_param();
  const int batch_size = static_cast<int>(param.batch_size());
  float* labels = output_labels_ ? batch->label.mutable_cpu_data() : nullptr;
  vector<int64_t> item_shape;
  int first_line = 0;
  for (int i = 0; i < batch_size; ++i) {
    const Entry& entry = entries_[position_];
    try {
      const cv::Mat image = ReadEntryImage(param, entry.path);
      const vector<int64_t> shape = transformer_->InferBlobShape(image);
      if (i == 0) {
        // A batch takes its first image's size, so unresized lists of mixed sizes
        // still work with batch_size 1.
        item_shape = shape;
        first_line = entry.line;
        vector<int64_t> data_shape = shape;
        data_shape[0] = batch_size;
        batch->data.Reshape(data_shape);
      } else {
        CAFFE_REQUIRE(shape == item_shape)
            << "transformed image has shape " << ShapeToString(shape) << " but the batch's first "
            << "image (line " << first_line << ") has " << ShapeToString(item_shape)
            << "; set new_height and new_width to resize";
      }
      transformer_->Transform(image, batch->data.mutable_cpu_data() + batch->data.offset(i));
    } catch (const Error& e) {
      Fail() << "image list '" << source_ << "' line " << entry.line << ": " << e.what();
    }
    if (labels) labels[i] = static_cast<float>(entry.label);
    Advance();
  }
}

#else  // !USE_OPENCV

void ImageDataLayer::DataLayerSetUp(const vector<Blob*>& top) {
  Fail() << "built without OpenCV, cannot read images";
}

void ImageDataLayer::LoadBatch(Batch* batch) {}

#endif  // USE_OPENCV

REGISTER_LAYER_CLASS(ImageData);

}  // namespace caffe
