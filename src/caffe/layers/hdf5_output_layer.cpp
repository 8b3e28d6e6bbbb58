#include "caffe/layers/hdf5_output_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/hdf5.hpp"

namespace caffe {

namespace {

// BVLC's dataset names, for bottom 0 and bottom 1.
const char* const kDatasetNames[] = {"data", "label"};

vector<int64_t> ItemShape(const Blob& blob) {
  return vector<int64_t>(blob.shape().begin() + 1, blob.shape().end());
}

}  // namespace

// Here, where Hdf5File and Hdf5RowAppender are complete types.
HDF5OutputLayer::HDF5OutputLayer(const LayerParameter& param) : Layer(param) {}
HDF5OutputLayer::~HDF5OutputLayer() = default;

void HDF5OutputLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const string& file_name = layer_param_.hdf5_output_param().file_name();
  LAYER_REQUIRE(!file_name.empty()) << "hdf5_output_param.file_name is empty";
  for (int i = 0; i < 2; ++i) {
    LAYER_REQUIRE(bottom[i]->num_axes() >= 1)
        << "bottom '" << bottom_name(i) << "' is a scalar; it needs its items along the first "
        << "axis";
    LAYER_REQUIRE(bottom[i]->count(1) > 0)
        << "bottom '" << bottom_name(i) << "' of shape " << ShapeToString(bottom[i]->shape())
        << " has items of no values";
  }
  datasets_.clear();
  file_.reset();
  try {
    file_ = std::make_unique<Hdf5File>(Hdf5File::Create(file_name));
    for (int i = 0; i < 2; ++i) {
      datasets_.push_back(
          std::make_unique<Hdf5RowAppender>(*file_, kDatasetNames[i], ItemShape(*bottom[i])));
    }
    file_->Flush();
  } catch (const Error& e) {
    Fail() << e.what();
  }
}

void HDF5OutputLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (int i = 0; i < 2; ++i) {
    // The datasets' rows have the shape of setup's items.
    const vector<int64_t>& row_shape = datasets_[i]->row_shape();
    LAYER_REQUIRE(bottom[i]->num_axes() >= 1 && ItemShape(*bottom[i]) == row_shape)
        << "bottom '" << bottom_name(i) << "' has shape " << ShapeToString(bottom[i]->shape())
        << ", but dataset '" << kDatasetNames[i] << "' of " << file_->file()
        << " holds items of shape " << ShapeToString(row_shape) << " (set at setup)";
  }
  LAYER_REQUIRE(bottom[0]->shape(0) == bottom[1]->shape(0))
      << "bottoms '" << bottom_name(0) << "' (" << ShapeToString(bottom[0]->shape()) << ") and '"
      << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must hold the same number of items";
}

void HDF5OutputLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  try {
    for (int i = 0; i < 2; ++i) datasets_[i]->Append(bottom[i]->cpu_data(), bottom[i]->shape(0));
    // A reader (or a run that dies later) sees every batch written so far.
    file_->Flush();
  } catch (const Error& e) {
    Fail() << e.what();
  }
}

void HDF5OutputLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                   const vector<Blob*>& bottom) {
  for (size_t i = 0; i < propagate_down.size(); ++i) {
    LAYER_REQUIRE(!propagate_down[i])
        << "writes its bottoms to a file and has no gradient for them, but backward was "
        << "requested for bottom '" << bottom_name(static_cast<int>(i)) << "'";
  }
}

REGISTER_LAYER_CLASS(HDF5Output);

}  // namespace caffe
