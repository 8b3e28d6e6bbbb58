// The public Caffe train/val nets in ../shared/compat train with their REAL Data
// layers: each layer's source (and mean_file) is pointed at small LMDBs and a mean
// .binaryproto that this suite writes with the project's own db API, Datum and
// WriteProtoToBinaryFile. Every Data layer runs at batch 2; the nets train through
// SolverRegistry with the compat solver files where present, then test one batch.
// Each record is a flat image whose value per channel is set by its label, so the
// batches the nets saw can be checked against the transform the file asks for.
// (test_model_zoo trains the same nets with DummyData in place of Data.)
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "caffe/data/db.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

constexpr int kBatch = 2;
constexpr int kRecords = 5;  // odd, so batches of 2 wrap mid-batch

// Pixel value of every pixel in channel c of a record labelled `label`.
int PixelValue(int label, int c) { return (37 * label + 71 * c + 19) % 256; }

struct ImageShape {
  int channels, height, width;
};

// Records 0..kRecords-1 with labels first_label + i.
string WriteFlatImageLmdb(const string& path, const ImageShape& shape, int first_label) {
  auto db = db::GetDB(DataParameter::LMDB);
  db->Open(path, db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  const int plane = shape.height * shape.width;
  for (int i = 0; i < kRecords; ++i) {
    const int label = first_label + i;
    Datum datum;
    datum.set_channels(shape.channels);
    datum.set_height(shape.height);
    datum.set_width(shape.width);
    string pixels;
    for (int c = 0; c < shape.channels; ++c) {
      pixels.append(plane, static_cast<char>(PixelValue(label, c)));
    }
    datum.set_data(pixels);
    datum.set_label(label);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    txn->Put(key, datum.SerializeAsString());
  }
  txn->Commit();
  return path;
}

// The per-pixel mean of the training records, as compute_image_mean computes it: a
// 1 x C x H x W BlobProto. Returns the per-channel values (the images are flat).
vector<float> WriteMeanFile(const string& path, const ImageShape& shape) {
  vector<float> channel_mean(shape.channels, 0.f);
  for (int c = 0; c < shape.channels; ++c) {
    for (int i = 0; i < kRecords; ++i) channel_mean[c] += PixelValue(i, c);
    channel_mean[c] /= kRecords;
  }
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(shape.channels);
  mean.set_height(shape.height);
  mean.set_width(shape.width);
  for (int c = 0; c < shape.channels; ++c) {
    for (int k = 0; k < shape.height * shape.width; ++k) mean.add_data(channel_mean[c]);
  }
  WriteProtoToBinaryFile(mean, path);
  return channel_mean;
}

struct CompatLmdbCase {
  const char* net_file;
  const char* solver_file;  // "" : cifar10_quick's settings, inline
  ImageShape records;
  int crop;        // 0: none; the file's crop_size must agree
  bool mean_file;  // the file's Data layers name a mean_file
  int iterations;
};

// The expected value of channel c of an item labelled `label` after the transform.
float Expected(const TransformationParameter& transform, const vector<float>& mean, int label,
               int c) {
  float value = PixelValue(label, c);
  if (transform.has_mean_file()) value -= mean[c];
  return value * transform.scale();
}

// The batch in net's data/label tops: shape, labels drawn from the records, and every
// value what the transform makes of that label's flat image.
void CheckBatch(const Net& net, const LayerParameter& data_layer, const CompatLmdbCase& c,
                int first_label, const vector<float>& mean) {
  SCOPED_TRACE(net.phase() == TRAIN ? "TRAIN batch" : "TEST batch");
  const Blob& data = *net.blob_by_name(data_layer.top(0));
  const Blob& label = *net.blob_by_name(data_layer.top(1));
  const int height = c.crop ? c.crop : c.records.height;
  const int width = c.crop ? c.crop : c.records.width;
  ASSERT_EQ(data.shape(), (vector<int64_t>{kBatch, c.records.channels, height, width}));
  ASSERT_EQ(label.shape(), (vector<int64_t>{kBatch}));
  const int64_t plane = static_cast<int64_t>(height) * width;
  for (int n = 0; n < kBatch; ++n) {
    const float label_value = label.cpu_data()[n];
    const int item_label = static_cast<int>(label_value);
    ASSERT_EQ(label_value, item_label);
    ASSERT_GE(item_label, first_label);
    ASSERT_LT(item_label, first_label + kRecords);
    for (int ch = 0; ch < c.records.channels; ++ch) {
      const float expected = Expected(data_layer.transform_param(), mean, item_label, ch);
      const float* values = data.cpu_data() + (n * c.records.channels + ch) * plane;
      int wrong = 0;
      for (int64_t k = 0; k < plane; ++k) wrong += std::fabs(values[k] - expected) > 1e-4f;
      EXPECT_EQ(wrong, 0) << "item " << n << " (label " << item_label << ") channel " << ch
                          << ": expected " << expected << ", first value " << values[0];
    }
  }
}

bool AllFinite(const Blob& blob) {
  for (int64_t i = 0; i < blob.count(); ++i) {
    if (!std::isfinite(blob.cpu_data()[i])) return false;
  }
  return true;
}

class CompatLmdbTest : public ::testing::TestWithParam<CompatLmdbCase> {};

TEST_P(CompatLmdbTest, TrainsOnItsRealDataLayers) {
  const string dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/compat is absent";
  const CompatLmdbCase& c = GetParam();
  const string net_file = dir + "/" + c.net_file;

  const string work = MakeTempDir("compat_lmdb");
  // TRAIN records carry labels 0..4, TEST records 5..9: a batch tells its source.
  constexpr int kTrainFirstLabel = 0, kTestFirstLabel = kRecords;
  const string train_lmdb = WriteFlatImageLmdb(work + "/train_lmdb", c.records, kTrainFirstLabel);
  const string test_lmdb = WriteFlatImageLmdb(work + "/test_lmdb", c.records, kTestFirstLabel);
  const string mean_path = work + "/mean.binaryproto";
  const vector<float> mean = WriteMeanFile(mean_path, c.records);

  NetParameter net_param;
  ReadNetParamsFromTextFile(net_file, &net_param);
  const LayerParameter* train_data = nullptr;
  const LayerParameter* test_data = nullptr;
  for (LayerParameter& layer : *net_param.mutable_layer()) {
    if (layer.type() != "Data") continue;
    ASSERT_EQ(layer.include_size(), 1) << layer.name();
    const bool train = layer.include(0).phase() == TRAIN;
    (train ? train_data : test_data) = &layer;
    // The file's transform is kept as written; only where the data lives changes.
    const TransformationParameter& transform = layer.transform_param();
    EXPECT_EQ(transform.crop_size(), static_cast<uint32_t>(c.crop)) << layer.name();
    EXPECT_EQ(transform.has_mean_file(), c.mean_file) << layer.name();
    EXPECT_EQ(layer.data_param().backend(), DataParameter::LMDB) << layer.name();
    if (transform.has_mean_file()) layer.mutable_transform_param()->set_mean_file(mean_path);
    layer.mutable_data_param()->set_source(train ? train_lmdb : test_lmdb);
    layer.mutable_data_param()->set_batch_size(kBatch);
  }
  ASSERT_NE(train_data, nullptr) << "no TRAIN Data layer in " << net_file;
  ASSERT_NE(test_data, nullptr) << "no TEST Data layer in " << net_file;
  ASSERT_EQ(train_data->top_size(), 2);
  ASSERT_EQ(test_data->top_size(), 2);

  SolverParameter solver_param;
  if (*c.solver_file) {
    ReadSolverParamsFromTextFile(dir + "/" + c.solver_file, &solver_param);
  } else {
    // cifar10_quick's own solver is not among the fixtures; its settings, inline.
    solver_param = ParseSolver(
        "base_lr: 0.001 momentum: 0.9 weight_decay: 0.004 lr_policy: 'fixed' "
        "max_iter: 4000 test_iter: 100 test_interval: 500");
  }
  solver_param.clear_net();
  solver_param.clear_train_net();
  *solver_param.mutable_net_param() = net_param;
  solver_param.set_max_iter(c.iterations);
  solver_param.set_solver_mode(SolverParameter::CPU);
  solver_param.set_snapshot(0);
  solver_param.set_snapshot_after_train(false);
  solver_param.set_display(0);
  solver_param.set_random_seed(5);
  // One test pass of one batch, after the last iteration.
  solver_param.clear_test_iter();
  solver_param.add_test_iter(1);
  solver_param.set_test_interval(c.iterations);
  solver_param.set_test_initialization(false);

  shared_ptr<Solver> solver =
      SolverRegistry::CreateSolver(solver_param, std::make_shared<Context>(), net_file);
  ASSERT_EQ(solver->test_nets().size(), 1u);
  const Net& net = *solver->net();
  vector<vector<float>> before;
  for (Blob* blob : net.learnable_params()) {
    before.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  solver->Solve();
  EXPECT_EQ(solver->iter(), c.iterations);
  EXPECT_TRUE(std::isfinite(solver->smoothed_loss()));
  EXPECT_GT(solver->smoothed_loss(), 0.f);

  CheckBatch(net, *train_data, c, kTrainFirstLabel, mean);
  CheckBatch(*solver->test_nets()[0], *test_data, c, kTestFirstLabel, mean);

  int changed = 0, trainable = 0;
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    const Blob* blob = net.learnable_params()[i];
    ASSERT_TRUE(AllFinite(*blob)) << net.learnable_param_names()[i];
    if (net.params_lr()[i] == 0.f) continue;
    ++trainable;
    for (int64_t j = 0; j < blob->count(); ++j) {
      if (blob->cpu_data()[j] != before[i][j]) {
        ++changed;
        break;
      }
    }
  }
  EXPECT_GT(trainable, 0);
  EXPECT_EQ(changed, trainable) << "every trainable blob should have moved";
  ASSERT_FALSE(solver->last_test_scores().empty());
  for (const auto& score : solver->last_test_scores()) {
    EXPECT_TRUE(std::isfinite(score.second)) << score.first;
  }
}

const CompatLmdbCase kCompatNets[] = {
    {"bvlc_alexnet__train_val.prototxt", "bvlc_alexnet__solver.prototxt", {3, 256, 256}, 227,
     true, 2},
    // CaffeNet's solver is not among the fixtures; AlexNet's is the same schedule.
    {"bvlc_reference_caffenet__train_val.prototxt", "bvlc_alexnet__solver.prototxt",
     {3, 256, 256}, 227, true, 2},
    {"bvlc_mnist__lenet_train_test.prototxt", "bvlc_mnist__lenet_solver.prototxt", {1, 28, 28},
     0, false, 2},
    {"bvlc_cifar10__cifar10_quick_train_test.prototxt", "", {3, 32, 32}, 0, true, 2},
    {"bvlc-intel_default_resnet_50__train_val.prototxt",
     "bvlc-intel_default_resnet_50__solver.prototxt", {3, 256, 256}, 224, true, 2},
};

INSTANTIATE_TEST_SUITE_P(Compat, CompatLmdbTest, ::testing::ValuesIn(kCompatNets),
                         [](const ::testing::TestParamInfo<CompatLmdbCase>& info) {
                           string name = info.param.net_file;
                           name = name.substr(0, name.find('.'));
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace caffe
