#include "caffe/layers/hdf5_data_layer.hpp"

#include <algorithm>
#include <fstream>

#include "caffe/layer_factory.hpp"
#include "caffe/util/hdf5.hpp"

namespace caffe {

string HDF5DataLayer::WhereListed(size_t file) const {
  return "HDF5 file list '" + source_ + "' line " + std::to_string(files_[file].line) + ": ";
}

void HDF5DataLayer::ReadSourceList() {
  std::ifstream list(source_);
  LAYER_REQUIRE(list.good()) << "cannot open the HDF5 file list '" << source_ << "'";
  files_.clear();
  string line;
  int line_number = 0;
  while (std::getline(list, line)) {
    ++line_number;
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == string::npos) continue;  // blank line
    SourceFile file;
    // The whole line but its surrounding blanks, so that a path may hold spaces.
    file.path = line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
    file.line = line_number;
    files_.push_back(file);
  }
  LAYER_REQUIRE(!files_.empty()) << "the HDF5 file list '" << source_ << "' names no files";
}

void HDF5DataLayer::CheckFiles(const vector<Blob*>& top) {
  item_shapes_.assign(top.size(), {});
  int64_t first_item = 0;
  for (size_t f = 0; f < files_.size(); ++f) {
    SourceFile& file = files_[f];
    try {
      const Hdf5File hdf5 = Hdf5File::Open(file.path);
      for (size_t t = 0; t < top.size(); ++t) {
        const string name = top_name(static_cast<int>(t));
        const vector<int64_t> shape = hdf5.DatasetShape(name);
        CAFFE_REQUIRE(!shape.empty()) << hdf5.Describe("dataset", name) << " is a scalar; top '"
                                      << name << "' needs the items along the dataset's first axis";
        if (t == 0) file.items = shape[0];
        CAFFE_REQUIRE(shape[0] == file.items)
            << hdf5.Describe("dataset", name) << " holds " << shape[0] << " items but dataset '"
            << top_name(0) << "' holds " << file.items
            << "; every top's dataset in a file must hold the same number of items";
        const vector<int64_t> item_shape(shape.begin() + 1, shape.end());
        if (f == 0) item_shapes_[t] = item_shape;
        CAFFE_REQUIRE(item_shape == item_shapes_[t])
            << hdf5.Describe("dataset", name) << " has items of shape " << ShapeToString(item_shape)
            << " but the first file, '" << files_[0].path << "', has "
            << ShapeToString(item_shapes_[t]) << "; top '" << name << "' needs one item shape";
      }
    } catch (const Error& e) {
      Fail() << WhereListed(f) << e.what();
    }
    file.first_item = first_item;
    first_item += file.items;
  }
}

int64_t HDF5DataLayer::FirstOwnRow(const SourceFile& file) const {
  // Item number first_item + row is this rank's when it is rank_ modulo world_size_.
  return (rank_ - file.first_item % world_size_ + world_size_) % world_size_;
}

void HDF5DataLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const HDF5DataParameter& param = layer_param_.hdf5_data_param();
  source_ = param.source();
  LAYER_REQUIRE(!source_.empty()) << "hdf5_data_param.source is empty";
  LAYER_REQUIRE(param.batch_size() > 0)
      << "hdf5_data_param.batch_size must be positive, found " << param.batch_size()
      << (param.has_batch_size() ? "" : " (it is not set)");
  // As in BVLC: the items are used as stored.
  LAYER_REQUIRE(!layer_param_.has_transform_param())
      << "takes no transform_param (HDF5 data is used as stored)";
  batch_size_ = param.batch_size();
  shuffle_ = param.shuffle();
  // Each rank trains on its own share of the items. A test pass reads them all: rank 0
  // tests for the job, and its score must be over the whole test set.
  const bool shard = phase_ == TRAIN;
  rank_ = shard ? context().rank() : 0;
  world_size_ = shard ? context().world_size() : 1;
  CHECK(world_size_ > 0 && rank_ >= 0 && rank_ < world_size_)
      << "rank " << rank_ << " of world size " << world_size_;
  // Drawn with or without shuffle, so that turning it on changes no other layer's draws
  // (the fillers of the layers set up after this one).
  rng_.seed(context().rng()());

  ReadSourceList();
  CheckFiles(top);
  int64_t total_items = 0;
  file_order_.clear();
  for (size_t f = 0; f < files_.size(); ++f) {
    total_items += files_[f].items;
    if (FirstOwnRow(files_[f]) < files_[f].items) file_order_.push_back(f);
  }
  LAYER_REQUIRE(total_items > 0) << "the files of HDF5 file list '" << source_ << "' hold no items";
  LAYER_REQUIRE(!file_order_.empty())
      << "the files of HDF5 file list '" << source_ << "' hold " << total_items
      << " items, none of them for rank " << rank_ << " of world size " << world_size_;

  item_sizes_.clear();
  top_shapes_.clear();
  for (size_t t = 0; t < top.size(); ++t) {
    vector<int64_t> shape{batch_size_};
    shape.insert(shape.end(), item_shapes_[t].begin(), item_shapes_[t].end());
    top_shapes_.push_back(shape);
    int64_t size = 1;
    for (int64_t dim : item_shapes_[t]) size *= dim;
    item_sizes_.push_back(size);
  }
  if (shuffle_) std::shuffle(file_order_.begin(), file_order_.end(), rng_);
  order_position_ = 0;
  LoadFile(file_order_[0]);
  LOG(INFO) << name() << ": reading " << total_items << " items from " << files_.size()
            << " HDF5 file(s) in batches of " << batch_size_ << (shuffle_ ? ", shuffled" : "")
            << (world_size_ > 1
                    ? " (rank " + std::to_string(rank_) + " of " + std::to_string(world_size_) + ")"
                    : std::string());
}

void HDF5DataLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t t = 0; t < top.size(); ++t) top[t]->Reshape(top_shapes_[t]);
}

void HDF5DataLayer::LoadFile(size_t file) {
  const SourceFile& source = files_[file];
  values_.resize(item_sizes_.size());
  for (size_t t = 0; t < item_sizes_.size(); ++t) {
    ResizeScratch(&values_[t], source.items * item_sizes_[t], "an HDF5 dataset's values");
  }
  try {
    const Hdf5File hdf5 = Hdf5File::Open(source.path);
    for (size_t t = 0; t < item_sizes_.size(); ++t) {
      vector<int64_t> shape{source.items};
      shape.insert(shape.end(), item_shapes_[t].begin(), item_shapes_[t].end());
      // The shape checked at setup: a file changed since then is refused here.
      hdf5.ReadFloats(top_name(static_cast<int>(t)), shape, values_[t].data());
    }
  } catch (const Error& e) {
    Fail() << WhereListed(file) << e.what();
  }
  loaded_file_ = file;
  OrderItems();
}

void HDF5DataLayer::OrderItems() {
  const SourceFile& file = files_[loaded_file_];
  item_order_.clear();
  for (int64_t row = FirstOwnRow(file); row < file.items; row += world_size_) {
    item_order_.push_back(row);
  }
  if (shuffle_) std::shuffle(item_order_.begin(), item_order_.end(), rng_);
  next_item_ = 0;
}

void HDF5DataLayer::NextFile() {
  if (++order_position_ == file_order_.size()) {
    // Every file has been read: the next epoch.
    order_position_ = 0;
    if (shuffle_) std::shuffle(file_order_.begin(), file_order_.end(), rng_);
  }
  const size_t file = file_order_[order_position_];
  if (file == loaded_file_) {
    // The only file, or the last one read again first: its values are in memory.
    OrderItems();
    return;
  }
  LoadFile(file);
}

void HDF5DataLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  vector<float*> out;
  for (Blob* blob : top) out.push_back(blob->mutable_cpu_data());
  for (int64_t i = 0; i < batch_size_; ++i) {
    if (next_item_ == item_order_.size()) NextFile();
    const int64_t item = item_order_[next_item_++];
    for (size_t t = 0; t < top.size(); ++t) {
      const int64_t size = item_sizes_[t];
      std::copy_n(values_[t].data() + item * size, size, out[t] + i * size);
    }
  }
}

REGISTER_LAYER_CLASS(HDF5Data);

}  // namespace caffe
