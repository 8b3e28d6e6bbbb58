// Data: reads Datum records in key order from a database (LMDB), transforms them,
// and emits batches of data (N x C x H x W) and, with a second top, labels (N).
// Reading wraps to the first record at the end. In a data-parallel run of
// world_size N, rank r keeps record i exactly when i mod N == r, so the ranks
// partition every epoch between them.
#ifndef CAFFE_LAYERS_DATA_LAYER_HPP_
#define CAFFE_LAYERS_DATA_LAYER_HPP_

#include <memory>
#include <string>

#include "caffe/data/db.hpp"
#include "caffe/layers/base_data_layer.hpp"

namespace caffe {

class DataLayer : public BasePrefetchingDataLayer {
 public:
  explicit DataLayer(const LayerParameter& param) : BasePrefetchingDataLayer(param) {}
  ~DataLayer() override { StopPrefetching(); }
  const char* type() const override { return "Data"; }

 protected:
  void DataLayerSetUp(const vector<Blob*>& top) override;
  void LoadBatch(Batch* batch) override;
  TransformationParameter transform_param() const override;

 private:
  // Moves the cursor forward, wrapping once at the end, to the next record this rank
  // keeps (possibly the current one).
  void SkipToOwnRecord();
  void NextRecord();
  // Parses the current record into datum_ and returns its raw (decoded) form.
  const Datum& ReadRecord(const string& key);

  string source_;
  int batch_size_ = 0;
  int rank_ = 0;
  int world_size_ = 1;
  int64_t index_ = 0;              // the cursor's position in the database
  vector<int64_t> record_shape_;   // C x H x W of the first record; all must match
  string first_key_;
  std::unique_ptr<db::DB> db_;
  std::unique_ptr<db::Cursor> cursor_;  // declared after db_: destroyed before it
  Datum datum_;    // reused between records to keep their buffers
  Datum decoded_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_DATA_LAYER_HPP_
