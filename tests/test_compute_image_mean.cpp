// Runs the built compute_image_mean tool on databases written here.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "caffe/data/data_transformer.hpp"
#include "caffe/data/db.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const std::string kTool = std::string(CAFFE_BINARY_DIR) + "/tools/compute_image_mean";

Datum RawDatum(int channels, int height, int width, const std::vector<int>& pixels) {
  Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  std::string data;
  for (int p : pixels) data.push_back(static_cast<char>(p));
  datum.set_data(data);
  return datum;
}

class ComputeImageMeanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FileExists(kTool)) << kTool << " is missing; build the tools first";
    dir_ = MakeTempDir("compute_image_mean") + "/";
  }

  std::string WriteDB(const std::vector<Datum>& datums) {
    const std::string path = dir_ + "lmdb";
    auto db = db::GetDB("lmdb");
    db->Open(path, db::OpenMode::NEW);
    auto txn = db->NewTransaction();
    for (size_t i = 0; i < datums.size(); ++i) {
      char key[16];
      std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
      txn->Put(key, datums[i].SerializeAsString());
    }
    txn->Commit();
    return path;
  }

  void ExpectError(const std::string& db_path, const std::string& text) {
    std::string output;
    EXPECT_EQ(RunCommand(kTool + " " + db_path + " " + dir_ + "mean.binaryproto", &output), 1)
        << output;
    EXPECT_EQ(output.rfind("error: ", 0), 0u) << output;
    EXPECT_EQ(output.find('\n'), output.size() - 1) << "more than one line: " << output;
    EXPECT_NE(output.find(text), std::string::npos) << output;
  }

  std::string dir_;
};

TEST_F(ComputeImageMeanTest, AveragesEveryRecord) {
  const std::string db_path = WriteDB({RawDatum(2, 1, 2, {0, 10, 20, 255}),
                                       RawDatum(2, 1, 2, {3, 10, 40, 0}),
                                       RawDatum(2, 1, 2, {3, 11, 60, 0})});
  const std::string mean_path = dir_ + "mean.binaryproto";
  std::string output;
  ASSERT_EQ(RunCommand(kTool + " " + db_path + " " + mean_path, &output), 0) << output;
  BlobProto mean;
  ReadProtoFromBinaryFile(mean_path, &mean);
  EXPECT_EQ(ShapeOfProto(mean), (vector<int64_t>{1, 2, 1, 2}));
  ASSERT_EQ(mean.data_size(), 4);
  EXPECT_FLOAT_EQ(mean.data(0), 2);
  EXPECT_FLOAT_EQ(mean.data(1), 31.f / 3);
  EXPECT_FLOAT_EQ(mean.data(2), 40);
  EXPECT_FLOAT_EQ(mean.data(3), 85);

  // The file is a mean_file the transformer accepts for these records.
  std::mt19937_64 rng(1);
  TransformationParameter param;
  param.set_mean_file(mean_path);
  DataTransformer transformer(param, TEST, rng);
  vector<float> out(4);
  transformer.Transform(RawDatum(2, 1, 2, {2, 10, 40, 85}), out.data());
  EXPECT_FLOAT_EQ(out[0], 0);
  EXPECT_FLOAT_EQ(out[3], 0);
}

TEST_F(ComputeImageMeanTest, FloatRecords) {
  Datum a, b;
  for (Datum* d : {&a, &b}) {
    d->set_channels(1);
    d->set_height(1);
    d->set_width(2);
  }
  a.add_float_data(1.5f);
  a.add_float_data(-1);
  b.add_float_data(0.5f);
  b.add_float_data(3);
  const std::string db_path = WriteDB({a, b});
  std::string output;
  ASSERT_EQ(RunCommand(kTool + " " + db_path + " " + dir_ + "mean.binaryproto", &output), 0)
      << output;
  BlobProto mean;
  ReadProtoFromBinaryFile(dir_ + "mean.binaryproto", &mean);
  EXPECT_FLOAT_EQ(mean.data(0), 1);
  EXPECT_FLOAT_EQ(mean.data(1), 1);
}

TEST_F(ComputeImageMeanTest, BadInputs) {
  ExpectError(dir_ + "missing", "data source '" + dir_ +
                                    "missing': cannot open LMDB (No such file or directory)");
  ExpectError(WriteDB({}), "has no records");
  std::string output;
  EXPECT_EQ(RunCommand(kTool + " only_db", &output), 1);
  EXPECT_NE(output.find("usage: compute_image_mean"), std::string::npos) << output;
}

TEST_F(ComputeImageMeanTest, MismatchedShapesAreAnError) {
  const std::string db_path =
      WriteDB({RawDatum(1, 1, 2, {1, 2}), RawDatum(1, 2, 1, {1, 2})});
  ExpectError(db_path, "record '00000001' has shape 1x2x1 but the first record ('00000000') "
                       "has shape 1x1x2");
}

}  // namespace
}  // namespace caffe
