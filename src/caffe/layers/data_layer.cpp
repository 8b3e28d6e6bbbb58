#include "caffe/layers/data_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

TransformationParameter DataLayer::transform_param() const {
  const DataParameter& data = layer_param_.data_param();
  TransformationParameter transform =
      FoldLegacyTransformParams(layer_param_.transform_param(), data);
  if (data.force_encoded_color()) transform.set_force_color(true);
  return transform;
}

void DataLayer::DataLayerSetUp(const vector<Blob*>& top) {
  const DataParameter& param = layer_param_.data_param();
  source_ = param.source();
  LAYER_REQUIRE(!source_.empty()) << "data_param.source is empty";
  LAYER_REQUIRE(param.batch_size() > 0) << "data_param.batch_size must be positive";
  batch_size_ = static_cast<int>(param.batch_size());
  // Each rank trains on its own share of the records. A test pass reads them all:
  // rank 0 tests for the job, and its score must be over the whole test set.
  const bool shard = phase_ == TRAIN;
  rank_ = shard ? context().rank() : 0;
  world_size_ = shard ? context().world_size() : 1;
  CHECK(world_size_ > 0 && rank_ >= 0 && rank_ < world_size_)
      << "rank " << rank_ << " of world size " << world_size_;

  try {
    db_ = db::GetDB(param.backend());
    db_->Open(source_, db::OpenMode::READ);
    cursor_ = db_->NewCursor();
  } catch (const Error& e) {
    Fail() << e.what();
  }
  LAYER_REQUIRE(cursor_->valid()) << "data source '" << source_ << "' has no records";
  index_ = 0;
  SkipToOwnRecord();
  if (param.rand_skip() > 0) {
    const uint64_t skip = context().rng()() % param.rand_skip();
    LOG(INFO) << name() << ": skipping the first " << skip << " records";
    for (uint64_t i = 0; i < skip; ++i) NextRecord();
  }

  // The first record fixes the shape of every batch.
  first_key_ = cursor_->key();
  const Datum& first = ReadRecord(first_key_);
  record_shape_ = DatumShape(first);
  vector<int64_t> data_shape;
  try {
    data_shape = transformer_->InferBlobShape(first);
  } catch (const Error& e) {
    Fail() << "data source '" << source_ << "', record '" << first_key_ << "': " << e.what();
  }
  data_shape[0] = batch_size_;
  ShapeTopsAndBatches(top, data_shape, {batch_size_});
  LOG(INFO) << name() << ": reading " << source_ << " in batches of "
            << ShapeToString(data_shape)
            << (world_size_ > 1 ? " (rank " + std::to_string(rank_) + " of " +
                                      std::to_string(world_size_) + ")"
                                : std::string());
}

void DataLayer::SkipToOwnRecord() {
  bool wrapped = false;
  while (true) {
    if (!cursor_->valid()) {
      LAYER_REQUIRE(!wrapped) << "data source '" << source_ << "' holds " << index_
                              << " records, none of them for rank " << rank_
                              << " of world size " << world_size_;
      wrapped = true;
      DLOG(INFO) << name() << ": restarting from the first record";
      cursor_->SeekToFirst();
      index_ = 0;
      continue;
    }
    if (index_ % world_size_ == rank_) return;
    cursor_->Next();
    ++index_;
  }
}

void DataLayer::NextRecord() {
  cursor_->Next();
  ++index_;
  SkipToOwnRecord();
}

const Datum& DataLayer::ReadRecord(const string& key) {
  LAYER_REQUIRE(datum_.ParseFromString(cursor_->value()))
      << "data source '" << source_ << "': record '" << key << "' is not a Datum";
  try {
    return transformer_->Decoded(datum_, &decoded_);
  } catch (const Error& e) {
    Fail() << "data source '" << source_ << "', record '" << key << "': " << e.what();
  }
}

void DataLayer::LoadBatch(Batch* batch) {
  float* data = batch->data.mutable_cpu_data();
  float* labels = output_labels_ ? batch->label.mutable_cpu_data() : nullptr;
  const int64_t item_count = batch->data.count(1);
  for (int i = 0; i < batch_size_; ++i) {
    const string key = cursor_->key();
    const Datum& record = ReadRecord(key);
    const vector<int64_t> shape = DatumShape(record);
    LAYER_REQUIRE(shape == record_shape_)
        << "data source '" << source_ << "': record '" << key << "' has shape "
        << ShapeToString(shape) << " but the first record ('" << first_key_ << "') has shape "
        << ShapeToString(record_shape_);
    try {
      transformer_->Transform(record, data + i * item_count);
    } catch (const Error& e) {
      Fail() << "data source '" << source_ << "', record '" << key << "': " << e.what();
    }
    if (labels) labels[i] = static_cast<float>(record.label());
    NextRecord();
  }
}

REGISTER_LAYER_CLASS(Data);

}  // namespace caffe
