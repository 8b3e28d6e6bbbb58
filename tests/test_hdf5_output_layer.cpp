// The HDF5Output layer: two forwards append both batches to "data" and "label" (read
// back with the HDF5 C library, values exact, stored as float32), the file is
// truncated at setup, the batch size may change, the layer works in a net, and the
// errors for bad bottoms and a refused backward.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/hdf5_output_layer.hpp"
#include "caffe/net.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

LayerParameter Hdf5OutputParam(const std::string& file_name) {
  return ParseLayer(
      "name: 'out' type: 'HDF5Output' bottom: 'score' bottom: 'truth' "
      "hdf5_output_param { file_name: '" +
      file_name + "' }");
}

void ExpectDataset(const std::string& file, const std::string& name, const vector<int64_t>& shape,
                   const vector<double>& values) {
  const Hdf5TestDataset dataset = ReadHdf5TestDataset(file, name);
  EXPECT_EQ(dataset.shape, shape) << name;
  EXPECT_EQ(dataset.values, values) << name;
  EXPECT_EQ(dataset.stored, Hdf5TestDataset::Stored::kFloat32) << name;
}

TEST(HDF5OutputLayerTest, EveryForwardAppendsItsBatch) {
  const std::string file = MakeTempDir("hdf5_output") + "/out.h5";
  // Whatever was there is replaced at setup.
  WriteHdf5TestFile(file, {{"data", {1}, {99}}, {"old", {1}, {1}}});
  Blob score({2, 3}), truth({2});
  {
    shared_ptr<Layer> layer = LayerRegistry::CreateLayer(Hdf5OutputParam(file));
    layer->SetUp({&score, &truth}, {});
    SetValues(&score, {0.5f, 1, 2, 3, 4, -5.25f});
    SetValues(&truth, {1, 0});
    layer->Forward({&score, &truth}, {});
    // The first batch is in the file while the layer still has it open.
    ExpectDataset(file, "data", {2, 3}, {0.5, 1, 2, 3, 4, -5.25});
    SetValues(&score, {6, 7, 8, 9, 10, 11});
    SetValues(&truth, {2, 3});
    layer->Forward({&score, &truth}, {});
  }
  EXPECT_EQ(Hdf5TestGroupMembers(file, "/"), (std::vector<std::string>{"data", "label"}));
  ExpectDataset(file, "data", {4, 3}, {0.5, 1, 2, 3, 4, -5.25, 6, 7, 8, 9, 10, 11});
  ExpectDataset(file, "label", {4}, {1, 0, 2, 3});
}

TEST(HDF5OutputLayerTest, TheBatchSizeMayChange) {
  const std::string file = MakeTempDir("hdf5_output") + "/out.h5";
  Blob score({1, 2, 1}), truth({1, 1});
  {
    HDF5OutputLayer layer(Hdf5OutputParam(file));
    layer.SetUp({&score, &truth}, {});
    SetValues(&score, {1, 2});
    SetValues(&truth, {3});
    layer.Forward({&score, &truth}, {});
    score.Reshape({2, 2, 1});
    truth.Reshape({2, 1});
    SetValues(&score, {4, 5, 6, 7});
    SetValues(&truth, {8, 9});
    layer.Forward({&score, &truth}, {});
  }
  ExpectDataset(file, "data", {3, 2, 1}, {1, 2, 4, 5, 6, 7});
  ExpectDataset(file, "label", {3, 1}, {3, 8, 9});
}

TEST(HDF5OutputLayerTest, WritesTheBatchesOfANet) {
  const std::string file = MakeTempDir("hdf5_output") + "/out.h5";
  NetParameter param = ParseNet(
      "name: 'n' state { phase: TEST } "
      "layer { name: 'in' type: 'Input' top: 'x' top: 'y' "
      "        input_param { shape { dim: 2 dim: 2 } shape { dim: 2 } } } "
      "layer { name: 'out' type: 'HDF5Output' bottom: 'x' bottom: 'y' "
      "        hdf5_output_param { file_name: '" +
      file + "' } }");
  {
    Net net(param, std::make_shared<Context>());
    for (int pass = 0; pass < 2; ++pass) {
      SetValues(net.blob_by_name("x").get(), {10.f * pass, 1, 2, 3});
      SetValues(net.blob_by_name("y").get(), {float(pass), 5});
      net.Forward();
    }
  }
  ExpectDataset(file, "data", {4, 2}, {0, 1, 2, 3, 10, 1, 2, 3});
  ExpectDataset(file, "label", {4}, {0, 5, 1, 5});
}

TEST(HDF5OutputLayerTest, BadInputIsAnError) {
  const std::string dir = MakeTempDir("hdf5_output");
  Blob score({2, 3}), truth({2}), short_truth({3});
  {
    HDF5OutputLayer layer(
        ParseLayer("name: 'out' type: 'HDF5Output' bottom: 'score' "
                   "bottom: 'truth'"));
    EXPECT_EQ(ErrorOf([&] {
                layer.SetUp({&score, &truth}, {});
              }),
              "layer 'out' (HDF5Output): hdf5_output_param.file_name is empty");
  }
  {
    const std::string missing_folder = dir + "/no/such/folder/out.h5";
    HDF5OutputLayer layer(Hdf5OutputParam(missing_folder));
    EXPECT_EQ(ErrorOf([&] {
                layer.SetUp({&score, &truth}, {});
              }),
              "layer 'out' (HDF5Output): " + missing_folder +
                  ": cannot create the HDF5 file (a missing or read-only folder, or the file "
                  "open elsewhere?)");
  }
  {
    HDF5OutputLayer layer(Hdf5OutputParam(dir + "/a.h5"));
    EXPECT_EQ(ErrorOf([&] {
                layer.SetUp({&score, &short_truth}, {});
              }),
              "layer 'out' (HDF5Output): bottoms 'score' (2x3) and 'truth' (3) must hold the "
              "same number of items");
  }
  {
    HDF5OutputLayer layer(Hdf5OutputParam(dir + "/b.h5"));
    layer.SetUp({&score, &truth}, {});
    Blob wider({2, 4});
    EXPECT_EQ(ErrorOf([&] {
                layer.Forward({&wider, &truth}, {});
              }),
              "layer 'out' (HDF5Output): bottom 'score' has shape 2x4, but dataset 'data' of " +
                  dir + "/b.h5 holds items of shape 3 (set at setup)");
    EXPECT_EQ(ErrorOf([&] {
                layer.Backward({}, {true, false}, {&score, &truth});
              }),
              "layer 'out' (HDF5Output): writes its bottoms to a file and has no gradient for "
              "them, but backward was requested for bottom 'score'");
    EXPECT_FALSE(layer.AllowForceBackward(0));
    EXPECT_FALSE(layer.AllowForceBackward(1));
  }
}

}  // namespace
}  // namespace caffe
