// The quick-start path end to end, minus the download: models/lenet_fashion's
// train_val.prototxt, its Data layers pointed at a tiny LMDB this test writes
// (1x28x28, labels 0..9, one easy pattern per class), trains 20 SGD iterations through
// the project's solver (models/lenet_fashion/solver_dense.prototxt) and its loss
// falls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "caffe/data/db.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

constexpr int kSide = 28;
constexpr int kClasses = 10;
constexpr int kRecords = 100;

// Record i has label i % 10; class k is a bright band on rows 2k+3 .. 2k+5 over
// faint noise, so that twenty steps are enough to learn something.
string RecordPixels(int i, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + i);
  std::uniform_int_distribution<int> noise(0, 60);
  const int label = i % kClasses;
  string pixels(kSide * kSide, '\0');
  for (int h = 0; h < kSide; ++h) {
    for (int w = 0; w < kSide; ++w) {
      const bool band = h >= 2 * label + 3 && h < 2 * label + 6;
      pixels[h * kSide + w] = static_cast<char>(band ? 255 : noise(rng));
    }
  }
  return pixels;
}

string WriteTinyLmdb(const string& path, uint64_t seed) {
  auto db = db::GetDB(DataParameter::LMDB);
  db->Open(path, db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  for (int i = 0; i < kRecords; ++i) {
    Datum datum;
    datum.set_channels(1);
    datum.set_height(kSide);
    datum.set_width(kSide);
    datum.set_data(RecordPixels(i, seed));
    datum.set_label(i % kClasses);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    txn->Put(key, datum.SerializeAsString());
  }
  txn->Commit();
  return path;
}

TEST(QuickstartDataTest, LeNetFashionTrainsOnATinyLmdbAndItsLossFalls) {
  const string model_dir = string(CAFFE_SOURCE_DIR) + "/models/lenet_fashion/";
  const string work = MakeTempDir("quickstart_data");
  constexpr uint64_t kTrainSeed = 1, kTestSeed = 2;
  const string train_lmdb = WriteTinyLmdb(work + "/train_lmdb", kTrainSeed);
  const string test_lmdb = WriteTinyLmdb(work + "/test_lmdb", kTestSeed);

  NetParameter net_param;
  ReadNetParamsFromTextFile(model_dir + "train_val.prototxt", &net_param);
  int pointed = 0;
  int train_batch = 0;
  float scale = 0;
  for (LayerParameter& layer : *net_param.mutable_layer()) {
    if (layer.type() != "Data") continue;
    ASSERT_EQ(layer.include_size(), 1);
    const bool train = layer.include(0).phase() == TRAIN;
    EXPECT_EQ(layer.data_param().source(),
              train ? "data/fashion_mnist/train_lmdb" : "data/fashion_mnist/test_lmdb");
    layer.mutable_data_param()->set_source(train ? train_lmdb : test_lmdb);
    if (train) {
      train_batch = layer.data_param().batch_size();
      scale = layer.transform_param().scale();
    }
    ++pointed;
  }
  ASSERT_EQ(pointed, 2) << "expected a TRAIN and a TEST Data layer";
  ASSERT_GT(train_batch, 0);

  const string solver_file = model_dir + "solver_dense.prototxt";
  SolverParameter solver_param;
  ReadSolverParamsFromTextFile(solver_file, &solver_param);
  EXPECT_EQ(solver_param.type(), "SGD");
  solver_param.clear_net();
  *solver_param.mutable_net_param() = net_param;
  constexpr int kIterations = 20;
  solver_param.set_max_iter(kIterations);
  solver_param.set_solver_mode(SolverParameter::CPU);
  solver_param.set_snapshot(0);
  solver_param.set_snapshot_after_train(false);
  solver_param.set_display(0);
  solver_param.set_average_loss(1);
  solver_param.set_test_iter(0, 1);
  solver_param.set_test_interval(kIterations);
  solver_param.set_test_initialization(false);
  shared_ptr<Solver> solver =
      SolverRegistry::CreateSolver(solver_param, std::make_shared<Context>(), solver_file);
  ASSERT_EQ(solver->test_nets().size(), 1u);

  // One Step per iteration: with average_loss 1 the smoothed loss is that step's loss.
  vector<float> losses;
  for (int i = 0; i < kIterations; ++i) {
    solver->Step(1);
    losses.push_back(solver->smoothed_loss());
    ASSERT_TRUE(std::isfinite(losses.back())) << "iteration " << i;
  }

  EXPECT_EQ(solver->iter(), kIterations);
  const float first = std::accumulate(losses.begin(), losses.begin() + 5, 0.f) / 5;
  const float last = std::accumulate(losses.end() - 5, losses.end(), 0.f) / 5;
  // Ten classes from random weights start near ln 10.
  EXPECT_NEAR(losses[0], std::log(10.f), 0.7f);
  EXPECT_LT(last, first) << "loss did not fall: first five average " << first
                         << ", last five " << last;

  // The last batch came from the tiny LMDB, in key order, scaled as the file says:
  // iteration 19 read records 19 * batch .. 19 * batch + batch - 1 (mod 100).
  const Blob& data = *solver->net()->blob_by_name("data");
  const Blob& label = *solver->net()->blob_by_name("label");
  ASSERT_EQ(data.shape(), (vector<int64_t>{train_batch, 1, kSide, kSide}));
  for (int n = 0; n < train_batch; ++n) {
    const int record = ((kIterations - 1) * train_batch + n) % kRecords;
    EXPECT_EQ(label.cpu_data()[n], record % kClasses) << "item " << n;
    const string pixels = RecordPixels(record, kTrainSeed);
    int wrong = 0;
    for (int k = 0; k < kSide * kSide; ++k) {
      const float expected = static_cast<uint8_t>(pixels[k]) * scale;
      wrong += std::fabs(data.cpu_data()[n * kSide * kSide + k] - expected) > 1e-6f;
    }
    EXPECT_EQ(wrong, 0) << "item " << n << " is not record " << record;
  }

  // The TEST net reads the other LMDB and reports a finite accuracy and loss.
  solver->TestAll();
  ASSERT_FALSE(solver->last_test_scores().empty());
  for (const auto& score : solver->last_test_scores()) {
    EXPECT_TRUE(std::isfinite(score.second)) << score.first;
  }
  const float accuracy = solver->last_test_scores().at("0/accuracy");
  EXPECT_GE(accuracy, 0.f);
  EXPECT_LE(accuracy, 1.f);
}

}  // namespace
}  // namespace caffe
