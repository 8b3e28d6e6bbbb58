#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifdef USE_OPENCV
#include <opencv2/imgcodecs/imgcodecs.hpp>
#endif

#include "caffe/data/db.hpp"
#include "caffe/layers/data_layer.hpp"
#include "caffe/net.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

// Record i: 1 x 2 x 3 pixels (7 * i + k) % 256, label i.
Datum RecordDatum(int i, int height = 2, int width = 3) {
  Datum datum;
  datum.set_channels(1);
  datum.set_height(height);
  datum.set_width(width);
  std::string data;
  for (int k = 0; k < height * width; ++k) data.push_back(static_cast<char>((7 * i + k) % 256));
  datum.set_data(data);
  datum.set_label(i);
  return datum;
}

std::string WriteDB(const std::vector<std::string>& values) {
  const std::string path = MakeTempDir("data_layer") + "/lmdb";
  auto db = db::GetDB(DataParameter::LMDB);
  db->Open(path, db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  for (size_t i = 0; i < values.size(); ++i) txn->Put(Key(static_cast<int>(i)), values[i]);
  txn->Commit();
  return path;
}

std::string WriteRecords(int count) {
  std::vector<std::string> values;
  for (int i = 0; i < count; ++i) values.push_back(RecordDatum(i).SerializeAsString());
  return WriteDB(values);
}

LayerParameter DataParam(const std::string& source, int batch_size,
                         const std::string& extra = "", Phase phase = TRAIN) {
  LayerParameter param = ParseLayer("name: 'data' type: 'Data' top: 'data' top: 'label' " +
                                    std::string("data_param { source: '") + source +
                                    "' batch_size: " + std::to_string(batch_size) +
                                    " backend: LMDB } " + extra);
  param.set_phase(phase);
  return param;
}

// Runs `batches` forward passes and returns the labels seen, checking that each
// item's pixels are those of the record its label names.
std::vector<int> ReadLabels(DataLayer* layer, int batches, const vector<Blob*>& tops) {
  std::vector<int> labels;
  for (int b = 0; b < batches; ++b) {
    layer->Forward({}, tops);
    const Blob& data = *tops[0];
    const Blob& label = *tops[1];
    for (int n = 0; n < data.num(); ++n) {
      const int record = static_cast<int>(label.cpu_data()[n]);
      for (int k = 0; k < 6; ++k) {
        EXPECT_EQ(data.cpu_data()[n * 6 + k], (7 * record + k) % 256);
      }
      labels.push_back(record);
    }
  }
  return labels;
}

TEST(DataLayerTest, EveryRecordOnceInOrderThenWraps) {
  const std::string source = WriteRecords(10);
  for (Phase phase : {TRAIN, TEST}) {
    DataLayer layer(DataParam(source, 4, "", phase));
    Blob data, label;
    vector<Blob*> tops{&data, &label};
    layer.SetUp({}, tops);
    EXPECT_EQ(data.shape(), (vector<int64_t>{4, 1, 2, 3}));
    EXPECT_EQ(label.shape(), (vector<int64_t>{4}));
    // 5 batches of 4 = two full epochs of 10 records.
    const std::vector<int> labels = ReadLabels(&layer, 5, tops);
    std::vector<int> expected;
    for (int epoch = 0; epoch < 2; ++epoch)
      for (int i = 0; i < 10; ++i) expected.push_back(i);
    EXPECT_EQ(labels, expected);
  }
}

TEST(DataLayerTest, ShardingByRankPartitionsTheRecords) {
  const std::string source = WriteRecords(10);
  const int world_size = 3;
  std::multiset<int> first_epoch;
  for (int rank = 0; rank < world_size; ++rank) {
    DataLayer layer(DataParam(source, 2));
    auto context = std::make_shared<Context>();
    context->set_rank(rank, world_size);
    layer.set_context(context);
    Blob data, label;
    vector<Blob*> tops{&data, &label};
    layer.SetUp({}, tops);
    const std::vector<int> labels = ReadLabels(&layer, 4, tops);
    // Rank r keeps records r, r+3, r+6, ... and wraps within its own share.
    std::vector<int> own;
    for (int i = rank; i < 10; i += world_size) own.push_back(i);
    for (size_t k = 0; k < labels.size(); ++k) EXPECT_EQ(labels[k], own[k % own.size()]);
    first_epoch.insert(labels.begin(), labels.begin() + own.size());
  }
  EXPECT_EQ(first_epoch, (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(DataLayerTest, RankWithoutRecordsIsAnError) {
  const std::string source = WriteRecords(2);
  DataLayer layer(DataParam(source, 1));
  auto context = std::make_shared<Context>();
  context->set_rank(3, 4);
  layer.set_context(context);
  Blob data, label;
  const std::string message = ErrorOf([&] { layer.SetUp({}, {&data, &label}); });
  EXPECT_NE(message.find("holds 2 records, none of them for rank 3 of world size 4"),
            std::string::npos)
      << message;
}

TEST(DataLayerTest, DataOnlyTop) {
  const std::string source = WriteRecords(3);
  LayerParameter param = DataParam(source, 2);
  param.mutable_top()->RemoveLast();
  DataLayer layer(param);
  Blob data;
  layer.SetUp({}, {&data});
  layer.Forward({}, {&data});
  layer.Forward({}, {&data});
  // Second batch: records 2 and 0.
  EXPECT_EQ(data.cpu_data()[0], 14);
  EXPECT_EQ(data.cpu_data()[6], 0);
}

TEST(DataLayerTest, TransformIsApplied) {
  const std::string source = WriteRecords(2);
  DataLayer layer(DataParam(source, 2, "transform_param { scale: 0.5 crop_size: 2 }", TEST));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{2, 1, 2, 2}));
  layer.Forward({}, tops);
  // Record 1 holds 7..12 as 2x3; the centre 2x2 crop takes columns 0-1.
  EXPECT_EQ(vector<float>(data.cpu_data() + 4, data.cpu_data() + 8),
            (vector<float>{3.5f, 4, 5, 5.5f}));
}

TEST(DataLayerTest, LegacyDataParamTransformFieldsFold) {
  const std::string source = WriteRecords(1);
  LayerParameter param = DataParam(source, 1, "transform_param { scale: 4 }", TEST);
  param.mutable_data_param()->set_scale(2);
  param.mutable_data_param()->set_crop_size(1);
  DataLayer layer(param);
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{1, 1, 1, 1}));
  layer.Forward({}, tops);
  EXPECT_EQ(data.cpu_data()[0], 2 * 1);  // centre of 0..5 as 2x3 is (0, 1)
}

TEST(DataLayerTest, RandSkipStartsWithinTheSkipRange) {
  const std::string source = WriteRecords(20);
  std::set<int> starts;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    LayerParameter param = DataParam(source, 1);
    param.mutable_data_param()->set_rand_skip(5);
    DataLayer layer(param);
    layer.set_context(std::make_shared<Context>(seed));
    Blob data, label;
    vector<Blob*> tops{&data, &label};
    layer.SetUp({}, tops);
    const std::vector<int> labels = ReadLabels(&layer, 3, tops);
    ASSERT_LT(labels[0], 5);
    EXPECT_EQ(labels[1], labels[0] + 1);
    EXPECT_EQ(labels[2], labels[0] + 2);
    starts.insert(labels[0]);
  }
  EXPECT_GT(starts.size(), 1u);
}

TEST(DataLayerTest, MissingSourceIsAnError) {
  const std::string source = MakeTempDir("data_layer") + "/missing_lmdb";
  DataLayer layer(DataParam(source, 1));
  Blob data, label;
  EXPECT_EQ(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }),
            "layer 'data' (Data): data source '" + source +
                "': cannot open LMDB (No such file or directory)");
}

TEST(DataLayerTest, LevelDBBackendIsAnError) {
  const std::string source = WriteRecords(1);
  LayerParameter param = DataParam(source, 1);
  param.mutable_data_param()->clear_backend();  // the proto's default is LEVELDB
  DataLayer layer(param);
  Blob data, label;
  EXPECT_EQ(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }),
            "layer 'data' (Data): LevelDB is not supported; convert to LMDB");
}

TEST(DataLayerTest, EmptyDatabaseIsAnError) {
  const std::string source = WriteDB({});
  DataLayer layer(DataParam(source, 1));
  Blob data, label;
  EXPECT_NE(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }).find("has no records"),
            std::string::npos);
}

TEST(DataLayerTest, MismatchedRecordShapeIsAnErrorFromForward) {
  std::vector<std::string> values;
  for (int i = 0; i < 6; ++i) {
    values.push_back((i == 3 ? RecordDatum(i, 3, 3) : RecordDatum(i)).SerializeAsString());
  }
  const std::string source = WriteDB(values);
  DataLayer layer(DataParam(source, 3));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(ReadLabels(&layer, 1, tops), (std::vector<int>{0, 1, 2}));  // before the bad one
  const std::string message = ErrorOf([&] { layer.Forward({}, tops); });
  EXPECT_EQ(message, "layer 'data' (Data): data source '" + source +
                         "': record '00000003' has shape 1x3x3 but the first record "
                         "('00000000') has shape 1x2x3");
  // The failure is sticky, and the layer still shuts down cleanly.
  EXPECT_THROW(layer.Forward({}, tops), Error);
}

TEST(DataLayerTest, RecordThatIsNotADatumIsAnError) {
  const std::string source =
      WriteDB({RecordDatum(0).SerializeAsString(), std::string("\xff\xff\xff\xff", 4)});
  DataLayer layer(DataParam(source, 2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  const std::string message = ErrorOf([&] { layer.Forward({}, tops); });
  EXPECT_NE(message.find("record '00000001' is not a Datum"), std::string::npos) << message;
}

TEST(DataLayerTest, DestroyWhileQueueIsFull) {
  const std::string source = WriteRecords(5);
  for (int prefetch : {1, 4}) {
    LayerParameter param = DataParam(source, 2);
    param.mutable_data_param()->set_prefetch(prefetch);
    auto layer = std::make_unique<DataLayer>(param);
    Blob data, label;
    layer->SetUp({}, {&data, &label});
    layer->Forward({}, {&data, &label});
    layer.reset();  // must join the thread without hanging
  }
}

TEST(DataLayerTest, BadParametersAreErrors) {
  const std::string source = WriteRecords(1);
  Blob data, label;
  {
    DataLayer layer(DataParam(source, 0));
    EXPECT_NE(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }).find("batch_size"),
              std::string::npos);
  }
  {
    LayerParameter param = DataParam(source, 1);
    param.mutable_data_param()->set_prefetch(0);
    DataLayer layer(param);
    EXPECT_NE(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }).find("prefetch"),
              std::string::npos);
  }
  {
    DataLayer layer(DataParam(source, 1, "transform_param { crop_size: 5 }"));
    const std::string message = ErrorOf([&] { layer.SetUp({}, {&data, &label}); });
    EXPECT_NE(message.find("record '00000000': crop_size 5 is larger than the data (1x2x3)"),
              std::string::npos)
        << message;
  }
}

TEST(DataLayerTest, RunsInsideANetShardedForTrainingWholeForTesting) {
  const std::string source = WriteRecords(4);
  for (const std::string phase : {"TRAIN", "TEST"}) {
    NetParameter net_param = ParseNet(
        "name: 'n' state { phase: " + phase + " } "
        "layer { name: 'data' type: 'Data' top: 'data' top: 'label' "
        "data_param { source: '" + source + "' batch_size: 2 backend: LMDB } }");
    auto context = std::make_shared<Context>();
    context->set_rank(1, 2);
    Net net(net_param, context);
    vector<float> labels;
    for (int pass = 0; pass < 2; ++pass) {
      const vector<Blob*>& outputs = net.Forward();
      ASSERT_EQ(outputs.size(), 2u);
      labels.insert(labels.end(), outputs[1]->cpu_data(), outputs[1]->cpu_data() + 2);
    }
    // Training, rank 1 of 2 keeps records 1 and 3; a test pass (rank 0's for the job)
    // reads every record, so that its score covers the whole test set.
    EXPECT_EQ(labels, phase == "TRAIN" ? (vector<float>{1, 3, 1, 3}) : (vector<float>{0, 1, 2, 3}))
        << phase;
  }
}

// A data layer whose loader fails with a non-caffe exception on its third batch.
class FailingDataLayer : public BasePrefetchingDataLayer {
 public:
  explicit FailingDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer(param) {}
  ~FailingDataLayer() override { StopPrefetching(); }
  const char* type() const override { return "FailingData"; }

 protected:
  void DataLayerSetUp(const vector<Blob*>& top) override {
    ShapeTopsAndBatches(top, {1, 1}, {1});
  }
  void LoadBatch(Batch* batch) override {
    if (loaded_ == 2) throw std::runtime_error("disk on fire");
    batch->data.mutable_cpu_data()[0] = static_cast<float>(loaded_++);
  }

 private:
  int loaded_ = 0;
};

TEST(BasePrefetchingDataLayerTest, ThreadExceptionBecomesErrorAfterGoodBatches) {
  FailingDataLayer layer(ParseLayer("name: 'broken' type: 'FailingData' top: 'data'"));
  Blob data;
  layer.SetUp({}, {&data});
  layer.Forward({}, {&data});
  EXPECT_EQ(data.cpu_data()[0], 0);
  layer.Forward({}, {&data});
  EXPECT_EQ(data.cpu_data()[0], 1);
  EXPECT_EQ(ErrorOf([&] { layer.Forward({}, {&data}); }),
            "layer 'broken' (FailingData): reading data failed: disk on fire");
}

#ifdef USE_OPENCV
TEST(DataLayerTest, EncodedRecordsAreDecoded) {
  std::vector<std::string> values;
  for (int i = 0; i < 3; ++i) {
    cv::Mat image(2, 3, CV_8UC1);
    for (int k = 0; k < 6; ++k) image.data[k] = static_cast<uchar>((7 * i + k) % 256);
    std::vector<uchar> png;
    ASSERT_TRUE(cv::imencode(".png", image, png));
    Datum datum;
    datum.set_data(std::string(png.begin(), png.end()));
    datum.set_encoded(true);
    datum.set_label(i);
    values.push_back(datum.SerializeAsString());
  }
  DataLayer layer(DataParam(WriteDB(values), 3));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{3, 1, 2, 3}));
  EXPECT_EQ(ReadLabels(&layer, 1, tops), (std::vector<int>{0, 1, 2}));
}
#endif

}  // namespace
}  // namespace caffe
