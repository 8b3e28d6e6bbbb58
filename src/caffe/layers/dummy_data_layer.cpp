#include "caffe/layers/dummy_data_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"

namespace caffe {

void DummyDataLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const DummyDataParameter& p = layer_param_.dummy_data_param();
  const int num_tops = static_cast<int>(top.size());
  // A repeated field may hold one value for every top or one value per top.
  auto require_one_or_per_top = [&](int size, const char* field) {
    LAYER_REQUIRE(size == 1 || size == num_tops)
        << "dummy_data_param." << field << " must be given once or once per top ("
        << num_tops << "), found " << size;
  };
  auto pick = [](int size, int i) { return size == 1 ? 0 : i; };

  const bool legacy_dims =
      p.num_size() > 0 || p.channels_size() > 0 || p.height_size() > 0 || p.width_size() > 0;
  if (legacy_dims) {
    LAYER_REQUIRE(p.shape_size() == 0)
        << "dummy_data_param takes either shape or num/channels/height/width, not both";
    require_one_or_per_top(p.num_size(), "num");
    require_one_or_per_top(p.channels_size(), "channels");
    require_one_or_per_top(p.height_size(), "height");
    require_one_or_per_top(p.width_size(), "width");
    for (int i = 0; i < num_tops; ++i) {
      top[i]->Reshape(p.num(pick(p.num_size(), i)), p.channels(pick(p.channels_size(), i)),
                      p.height(pick(p.height_size(), i)), p.width(pick(p.width_size(), i)));
    }
  } else {
    require_one_or_per_top(p.shape_size(), "shape");
    for (int i = 0; i < num_tops; ++i) {
      const BlobShape& shape = p.shape(pick(p.shape_size(), i));
      for (int d = 0; d < shape.dim_size(); ++d) {
        LAYER_REQUIRE(shape.dim(d) > 0) << "shape for top '" << top_name(i) << "': dimension "
                                        << d << " must be positive, found " << shape.dim(d);
      }
      top[i]->Reshape(shape);
    }
  }

  fillers_.clear();
  refill_.clear();
  if (p.data_filler_size() > 0) require_one_or_per_top(p.data_filler_size(), "data_filler");
  for (int i = 0; i < num_tops; ++i) {
    // No filler at all means zeros (the FillerParameter default is constant 0).
    const FillerParameter filler = p.data_filler_size() == 0
                                       ? FillerParameter()
                                       : p.data_filler(pick(p.data_filler_size(), i));
    LAYER_REQUIRE(IsKnownFiller(filler.type()))
        << "unknown data_filler type '" << filler.type() << "' for top '" << top_name(i) << "'";
    fillers_.push_back(filler);
    refill_.push_back(filler.type() != "constant");
    // A constant never changes, so it is written once here and Forward skips it.
    if (!refill_.back()) FillBlob(filler, top[i], context().rng());
  }
}

void DummyDataLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 0; i < top.size(); ++i) {
    if (refill_[i]) FillBlob(fillers_[i], top[i], context().rng());
  }
}

REGISTER_LAYER_CLASS(DummyData);

}  // namespace caffe
