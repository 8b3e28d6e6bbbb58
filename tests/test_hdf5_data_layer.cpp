// The HDF5Data layer on files written here with the HDF5 C library: exact batches in
// list order across two files and the wrap back to the first, float64 and int32 read
// as float, shuffled epochs (a permutation, files kept together, redrawn each epoch,
// the same for a seed), the ranks' disjoint shares, and the error for each kind of bad
// input.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/hdf5_data_layer.hpp"
#include "caffe/net.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

using Stored = Hdf5TestDataset::Stored;

// Writes `dir`/`name` with items first .. first + count - 1; item k is data {10 k,
// 10 k + 1} and label k, so that a batch's labels name its items and the data can be
// checked against them.
std::string WriteItems(const std::string& dir, const std::string& name, int first, int count,
                       Stored data_type = Stored::kFloat32, Stored label_type = Stored::kFloat32) {
  std::vector<double> data, label;
  for (int k = first; k < first + count; ++k) {
    data.push_back(10 * k);
    data.push_back(10 * k + 1);
    label.push_back(k);
  }
  const std::string path = dir + "/" + name;
  WriteHdf5TestFile(path,
                    {{"data", {count, 2}, data, data_type}, {"label", {count}, label, label_type}});
  return path;
}

std::string WriteList(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/list.txt";
  WriteFileAtomically(path, text);
  return path;
}

LayerParameter Hdf5DataParam(const std::string& list, int batch_size, const std::string& extra = "",
                             Phase phase = TRAIN) {
  LayerParameter param = ParseLayer(
      "name: 'data' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { source: '" + list +
      "' batch_size: " + std::to_string(batch_size) + " " + extra + " }");
  param.set_phase(phase);
  return param;
}

// Runs `batches` forwards and returns the labels seen, checking each item's data
// against its label.
std::vector<int> ReadLabels(Layer* layer, int batches, Blob* data, Blob* label) {
  std::vector<int> labels;
  for (int b = 0; b < batches; ++b) {
    layer->Forward({}, {data, label});
    for (int64_t n = 0; n < label->count(); ++n) {
      const int k = static_cast<int>(label->cpu_data()[n]);
      EXPECT_EQ(data->cpu_data()[2 * n], 10.f * k) << "batch " << b << " item " << n;
      EXPECT_EQ(data->cpu_data()[2 * n + 1], 10.f * k + 1) << "batch " << b << " item " << n;
      labels.push_back(k);
    }
  }
  return labels;
}

// The labels a layer set up with `context` reads in `batches` forwards.
std::vector<int> RunLayer(const LayerParameter& param, shared_ptr<Context> context, int batches) {
  HDF5DataLayer layer(param);
  layer.set_context(std::move(context));
  Blob data, label;
  layer.SetUp({}, {&data, &label});
  return ReadLabels(&layer, batches, &data, &label);
}

// The message of the error that setting up a layer of `param` raises.
std::string SetUpError(const LayerParameter& param) {
  HDF5DataLayer layer(param);
  Blob data, label;
  return ErrorOf([&] { layer.SetUp({}, {&data, &label}); });
}

TEST(HDF5DataLayerTest, ListOrderAcrossFilesThenBackToTheFirst) {
  const std::string dir = MakeTempDir("hdf5_data");
  // As h5py writes by default: float64 data and integer labels, read as float.
  WriteItems(dir, "a.h5", 0, 3, Stored::kFloat64, Stored::kInt32);
  WriteItems(dir, "b.h5", 3, 2);
  // Blank lines and the blanks around a path are skipped.
  const std::string list = WriteList(dir, dir + "/a.h5\n\n   " + dir + "/b.h5  \n");
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(Hdf5DataParam(list, 4));
  Blob data, label;
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), (vector<int64_t>{4, 2}));
  EXPECT_EQ(label.shape(), (vector<int64_t>{4}));
  // Batches of 4 over 5 items: a batch spans both files, and the wrap.
  EXPECT_EQ(ReadLabels(layer.get(), 3, &data, &label),
            (std::vector<int>{0, 1, 2, 3, /**/ 4, 0, 1, 2, /**/ 3, 4, 0, 1}));
  ExpectExactValues(data.cpu_data(), {30, 31, 40, 41, 0, 1, 10, 11}, "last batch's data");
}

TEST(HDF5DataLayerTest, ItemsOfAnyShapeAndAnyNumberOfTops) {
  // Three tops; items of 2 x 3 and scalar items; the top's name picks the dataset.
  const std::string dir = MakeTempDir("hdf5_data");
  std::vector<double> image(2 * 2 * 3), weight{0.5, -1.5};
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<double>(i);
  WriteHdf5TestFile(
      dir + "/f.h5",
      {{"weight", {2}, weight}, {"image", {2, 2, 3}, image}, {"unused", {2}, {7, 8}}});
  const std::string list = WriteList(dir, dir + "/f.h5\n");
  HDF5DataLayer layer(ParseLayer(
      "name: 'in' type: 'HDF5Data' top: 'image' top: 'weight' hdf5_data_param { source: '" + list +
      "' batch_size: 3 }"));
  Blob image_top, weight_top;
  layer.SetUp({}, {&image_top, &weight_top});
  EXPECT_EQ(image_top.shape(), (vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(weight_top.shape(), (vector<int64_t>{3}));
  layer.Forward({}, {&image_top, &weight_top});
  ExpectExactValues(image_top.cpu_data(), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5},
                    "image");
  ExpectExactValues(weight_top.cpu_data(), {0.5f, -1.5f, 0.5f}, "weight");
}

TEST(HDF5DataLayerTest, ShuffleDrawsAPermutationOfFilesAndItemsEachEpoch) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 5);
  WriteItems(dir, "b.h5", 5, 3);
  const std::string list = WriteList(dir, dir + "/a.h5\n" + dir + "/b.h5\n");
  const LayerParameter param = Hdf5DataParam(list, 8, "shuffle: true");
  // Batches of 8 over 8 items: each forward is one epoch.
  const std::vector<int> labels = RunLayer(param, std::make_shared<Context>(5), 4);
  std::set<std::vector<int>> epochs;
  for (int e = 0; e < 4; ++e) {
    std::vector<int> epoch(labels.begin() + 8 * e, labels.begin() + 8 * (e + 1));
    // A file's items are read together: a's five then b's three, or b's then a's.
    const bool a_first = epoch[0] < 5;
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(epoch[i] < 5, a_first ? i < 5 : i >= 3) << "epoch " << e << " position " << i;
    }
    epochs.insert(epoch);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7})) << "epoch " << e;
  }
  // Unshuffled, every epoch would be 0 .. 7; a single draw, every epoch the same.
  EXPECT_GT(epochs.size(), 1u) << "the order must be drawn anew each epoch";
  EXPECT_EQ(RunLayer(param, std::make_shared<Context>(5), 4), labels)
      << "the same seed must give the same order";
  EXPECT_NE(RunLayer(param, std::make_shared<Context>(6), 4), labels)
      << "another seed should give another order";
}

TEST(HDF5DataLayerTest, RanksReadDisjointSharesThatCoverEveryItem) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 5);
  WriteItems(dir, "b.h5", 5, 3);
  const std::string list = WriteList(dir, dir + "/a.h5\n" + dir + "/b.h5\n");
  // Items are numbered across the list (a's 0 .. 4, b's 5 .. 7); rank r of 3 reads
  // those equal to r modulo 3, in list order, and wraps within its own share.
  const std::vector<std::vector<int>> shares{{0, 3, 6}, {1, 4, 7}, {2, 5}};
  std::multiset<int> all;
  for (int rank = 0; rank < 3; ++rank) {
    auto context = std::make_shared<Context>();
    context->set_rank(rank, 3);
    const std::vector<int> labels = RunLayer(Hdf5DataParam(list, 1), context, 6);
    const std::vector<int>& share = shares[rank];
    for (size_t k = 0; k < labels.size(); ++k) {
      EXPECT_EQ(labels[k], share[k % share.size()]) << "rank " << rank << " item " << k;
    }
    all.insert(share.begin(), share.end());

    // Shuffled, a rank's epoch is a permutation of its own share.
    auto shuffled_context = std::make_shared<Context>(11);
    shuffled_context->set_rank(rank, 3);
    std::vector<int> epoch = RunLayer(
        Hdf5DataParam(list, static_cast<int>(share.size()), "shuffle: true"), shuffled_context, 1);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, share) << "rank " << rank << ", shuffled";
  }
  EXPECT_EQ(all, (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7}));

  // A test pass reads every item, whatever the rank (rank 0 tests for the job).
  auto context = std::make_shared<Context>();
  context->set_rank(1, 3);
  EXPECT_EQ(RunLayer(Hdf5DataParam(list, 8, "", TEST), context, 1),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(HDF5DataLayerTest, RunsInANetShardedForTraining) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 4);
  const std::string list = WriteList(dir, dir + "/a.h5\n");
  NetParameter net_param = ParseNet(
      "name: 'n' state { phase: TRAIN } "
      "layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label' "
      "hdf5_data_param { source: '" +
      list + "' batch_size: 2 } }");
  auto context = std::make_shared<Context>();
  context->set_rank(1, 2);
  Net net(net_param, context);
  const vector<Blob*>& outputs = net.Forward();
  ASSERT_EQ(outputs.size(), 2u);
  ExpectExactValues(outputs[0]->cpu_data(), {10, 11, 30, 31}, "rank 1's data");
  ExpectExactValues(outputs[1]->cpu_data(), {1, 3}, "rank 1's labels");
}

TEST(HDF5DataLayerTest, RankWithoutItemsIsAnError) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 2);
  const std::string list = WriteList(dir, dir + "/a.h5\n");
  HDF5DataLayer layer(Hdf5DataParam(list, 1));
  auto context = std::make_shared<Context>();
  context->set_rank(3, 4);
  layer.set_context(context);
  Blob data, label;
  EXPECT_EQ(ErrorOf([&] {
              layer.SetUp({}, {&data, &label});
            }),
            "layer 'data' (HDF5Data): the files of HDF5 file list '" + list +
                "' hold 2 items, none of them for rank 3 of world size 4");
}

TEST(HDF5DataLayerTest, BadParametersAreErrors) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 2);
  const std::string list = WriteList(dir, dir + "/a.h5\n");
  EXPECT_EQ(SetUpError(Hdf5DataParam(list, 0)),
            "layer 'data' (HDF5Data): hdf5_data_param.batch_size must be positive, found 0");
  EXPECT_EQ(SetUpError(ParseLayer("name: 'data' type: 'HDF5Data' top: 'data' "
                                  "hdf5_data_param { batch_size: 2 }")),
            "layer 'data' (HDF5Data): hdf5_data_param.source is empty");
  LayerParameter transformed = Hdf5DataParam(list, 2);
  transformed.mutable_transform_param()->set_scale(0.5f);
  EXPECT_EQ(SetUpError(transformed),
            "layer 'data' (HDF5Data): takes no transform_param (HDF5 data is used as stored)");
}

TEST(HDF5DataLayerTest, BadListsAreErrors) {
  const std::string dir = MakeTempDir("hdf5_data");
  const std::string absent_list = dir + "/absent.txt";
  EXPECT_EQ(SetUpError(Hdf5DataParam(absent_list, 2)),
            "layer 'data' (HDF5Data): cannot open the HDF5 file list '" + absent_list + "'");
  const std::string empty_list = WriteList(dir, "\n  \n");
  EXPECT_EQ(SetUpError(Hdf5DataParam(empty_list, 2)),
            "layer 'data' (HDF5Data): the HDF5 file list '" + empty_list + "' names no files");
}

TEST(HDF5DataLayerTest, BadFilesAreErrorsNamingTheListLine) {
  const std::string dir = MakeTempDir("hdf5_data");
  const std::string good = WriteItems(dir, "good.h5", 0, 3);
  const std::string list = dir + "/list.txt";
  // Each case: the second line of the list names a bad file, and the message.
  auto error_for = [&](const std::string& second) {
    WriteFileAtomically(list, good + "\n" + second + "\n");
    return SetUpError(Hdf5DataParam(list, 2));
  };
  const std::string prefix = "layer 'data' (HDF5Data): HDF5 file list '" + list + "' line 2: ";

  const std::string absent = dir + "/absent.h5";
  EXPECT_EQ(error_for(absent), prefix + absent + ": cannot open file (No such file or directory)");

  const std::string text = dir + "/text.h5";
  WriteFileAtomically(text, "not an HDF5 file at all");
  EXPECT_EQ(error_for(text), prefix + text + ": not an HDF5 file");

  const std::string no_label = dir + "/no_label.h5";
  WriteHdf5TestFile(no_label, {{"data", {1, 2}, {0, 1}}});
  EXPECT_EQ(error_for(no_label), prefix + no_label + ": dataset 'label' is missing");

  const std::string uneven = dir + "/uneven.h5";
  WriteHdf5TestFile(uneven, {{"data", {3, 2}, {0, 1, 2, 3, 4, 5}}, {"label", {2}, {0, 1}}});
  EXPECT_EQ(error_for(uneven), prefix + uneven +
                                   ": dataset 'label' holds 2 items but dataset 'data' holds 3; "
                                   "every top's dataset in a file must hold the same number of "
                                   "items");

  const std::string wider = dir + "/wider.h5";
  WriteHdf5TestFile(wider, {{"data", {1, 3}, {0, 1, 2}}, {"label", {1}, {0}}});
  EXPECT_EQ(error_for(wider), prefix + wider +
                                  ": dataset 'data' has items of shape 3 but the "
                                  "first file, '" +
                                  good + "', has 2; top 'data' needs one item shape");

  const std::string scalar = dir + "/scalar.h5";
  WriteHdf5TestFile(scalar, {{"data", {}, {4}}, {"label", {1}, {0}}});
  EXPECT_EQ(error_for(scalar), prefix + scalar +
                                   ": dataset 'data' is a scalar; top 'data' needs "
                                   "the items along the dataset's first axis");
}

TEST(HDF5DataLayerTest, AFileChangedAfterSetUpIsAnErrorWhenItIsRead) {
  const std::string dir = MakeTempDir("hdf5_data");
  WriteItems(dir, "a.h5", 0, 2);
  const std::string b = WriteItems(dir, "b.h5", 2, 2);
  const std::string list = WriteList(dir, dir + "/a.h5\n" + b + "\n");
  HDF5DataLayer layer(Hdf5DataParam(list, 2));
  Blob data, label;
  layer.SetUp({}, {&data, &label});
  WriteItems(dir, "b.h5", 2, 4);  // b now holds 4 items, not the 2 checked at setup
  layer.Forward({}, {&data, &label});
  EXPECT_EQ(ErrorOf([&] {
              layer.Forward({}, {&data, &label});
            }),
            "layer 'data' (HDF5Data): HDF5 file list '" + list + "' line 2: " + b +
                ": dataset 'data' has shape 4x2, expected 2x2");
}

}  // namespace
}  // namespace caffe
