// Weights in BVLC Caffe's HDF5 layout: Net::ToHDF5 then CopyTrainedLayersFromHDF5 (and
// CopyTrainedLayersFrom by the .h5 ending) into a fresh net gives the same weights; the
// file has BVLC's groups (data/<layer>/<blob>, a shared blob once, diff/ with gradients)
// as the HDF5 C library reads it; a file written with the C library alone loads; and
// the errors for files that do not fit the net.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "caffe/net.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

using Stored = Hdf5TestDataset::Stored;

// ip3 shares ip2's weights (param name 'shared'); input, relu and loss have no blobs.
const char* kSharingNet = R"(
  layer { name: 'input' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 4 } } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h'
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 }
                                bias_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'p2' param { name: 'shared' }
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 }
                                bias_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'ip3' type: 'InnerProduct' bottom: 'p2' top: 'p3' param { name: 'shared' }
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 }
                                bias_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p3' bottom: 'y' top: 'loss' }
)";

// One InnerProduct 'ip' (2 x 3 weights, 2 biases) named `name`.
std::string OneIpNet(const std::string& name = "ip") {
  return R"(
    layer { name: 'input' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 3 } } }
    layer { name: ')" +
         name + R"(' type: 'InnerProduct' bottom: 'x' top: 'p'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 1 }
                                  bias_filler { type: 'gaussian' std: 1 } } })";
}

// A TRAIN net whose fillers draw from a stream seeded with `seed`.
shared_ptr<Net> MakeNet(const std::string& text, uint64_t seed) {
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(TRAIN);
  return std::make_shared<Net>(param, std::make_shared<Context>(seed), "net.prototxt");
}

std::vector<double> Values(const float* values, int64_t count) {
  return std::vector<double>(values, values + count);
}

// Every blob of every layer holds the same values in both nets.
void ExpectSameWeights(const Net& a, const Net& b) {
  ASSERT_EQ(a.layers().size(), b.layers().size());
  for (size_t i = 0; i < a.layers().size(); ++i) {
    const auto& blobs_a = a.layers()[i]->blobs();
    const auto& blobs_b = b.layers()[i]->blobs();
    ASSERT_EQ(blobs_a.size(), blobs_b.size()) << a.layer_names()[i];
    for (size_t j = 0; j < blobs_a.size(); ++j) {
      ASSERT_EQ(blobs_a[j]->shape(), blobs_b[j]->shape()) << a.layer_names()[i] << " blob " << j;
      for (int64_t k = 0; k < blobs_a[j]->count(); ++k) {
        EXPECT_EQ(blobs_a[j]->cpu_data()[k], blobs_b[j]->cpu_data()[k])
            << a.layer_names()[i] << " blob " << j << " element " << k;
      }
    }
  }
}

TEST(NetHdf5Test, WeightsRoundTrip) {
  const std::string file = MakeTempDir("net_hdf5") + "/w.caffemodel.h5";
  auto saved = MakeNet(kSharingNet, 1);
  saved->ToHDF5(file);
  EXPECT_FALSE(FileExists(file + ".tmp." + std::to_string(::getpid())))
      << "written through a temporary file, renamed";

  auto loaded = MakeNet(kSharingNet, 2);  // other fillers' values, to be replaced
  ASSERT_NE(loaded->learnable_params()[0]->cpu_data()[0],
            saved->learnable_params()[0]->cpu_data()[0]);
  loaded->CopyTrainedLayersFromHDF5(file);
  ExpectSameWeights(*saved, *loaded);

  // The .h5 ending is enough for the loader every tool and pycaffe use.
  auto by_name = MakeNet(kSharingNet, 3);
  by_name->CopyTrainedLayersFrom(file);
  ExpectSameWeights(*saved, *by_name);
}

TEST(NetHdf5Test, FileHasBvlcsLayout) {
  const std::string file = MakeTempDir("net_hdf5") + "/w.h5";
  auto net = MakeNet(kSharingNet, 1);
  FillUniform(net->blob_by_name("x").get(), -1, 1, 4);
  FillUniform(net->blob_by_name("y").get(), -1, 1, 5);
  net->ForwardBackward();  // gradients for the diff group
  net->ToHDF5(file, /*write_diff=*/true);

  EXPECT_EQ(Hdf5TestGroupMembers(file, "/"), (std::vector<std::string>{"data", "diff"}));
  // A group for every layer, blobs or not.
  const std::vector<std::string> layers{"input", "ip1", "ip2", "ip3", "loss", "relu"};
  EXPECT_EQ(Hdf5TestGroupMembers(file, "data"), layers);
  EXPECT_EQ(Hdf5TestGroupMembers(file, "diff"), layers);
  EXPECT_TRUE(Hdf5TestGroupMembers(file, "data/relu").empty());
  EXPECT_EQ(Hdf5TestGroupMembers(file, "data/ip1"), (std::vector<std::string>{"0", "1"}));
  // ip3's weights are ip2's: their values are written once, under ip2; their gradient
  // under both, as BVLC does.
  EXPECT_EQ(Hdf5TestGroupMembers(file, "data/ip3"), (std::vector<std::string>{"1"}));
  EXPECT_EQ(Hdf5TestGroupMembers(file, "diff/ip3"), (std::vector<std::string>{"0", "1"}));

  for (const std::string layer : {"ip1", "ip2", "ip3"}) {
    const auto& blobs = net->layer_by_name(layer)->blobs();
    for (size_t j = 0; j < blobs.size(); ++j) {
      const Blob& blob = *blobs[j];
      const std::string index = std::to_string(j);
      if (layer != "ip3" || j != 0) {
        const Hdf5TestDataset data = ReadHdf5TestDataset(file, "data/" + layer + "/" + index);
        EXPECT_EQ(data.shape, blob.shape()) << layer << " blob " << j;
        EXPECT_EQ(data.values, Values(blob.cpu_data(), blob.count())) << layer << " blob " << j;
        EXPECT_EQ(data.stored, Stored::kFloat32) << layer << " blob " << j;
      }
      const Hdf5TestDataset diff = ReadHdf5TestDataset(file, "diff/" + layer + "/" + index);
      EXPECT_EQ(diff.shape, blob.shape()) << layer << " blob " << j;
      EXPECT_EQ(diff.values, Values(blob.cpu_diff(), blob.count())) << layer << " blob " << j;
    }
  }
  EXPECT_NE(net->layer_by_name("ip1")->blobs()[0]->asum_diff(), 0.f) << "the diffs are real";
}

TEST(NetHdf5Test, LayerNamesWithASlashNestGroups) {
  const std::string file = MakeTempDir("net_hdf5") + "/w.h5";
  auto saved = MakeNet(OneIpNet("block/ip"), 1);
  saved->ToHDF5(file);
  EXPECT_EQ(Hdf5TestGroupMembers(file, "data"), (std::vector<std::string>{"block", "input"}));
  EXPECT_EQ(Hdf5TestGroupMembers(file, "data/block/ip"), (std::vector<std::string>{"0", "1"}));
  auto loaded = MakeNet(OneIpNet("block/ip"), 2);
  loaded->CopyTrainedLayersFrom(file);
  ExpectSameWeights(*saved, *loaded);
}

TEST(NetHdf5Test, AFileWrittenWithTheCLibraryLoads) {
  // As another program would write BVLC's layout (here float64), with a layer this net
  // lacks, which is ignored.
  const std::string file = MakeTempDir("net_hdf5") + "/other.h5";
  WriteHdf5TestFile(file, {{"data/ip/0", {2, 3}, {1, 2, 3, 4, 5, -6.5}, Stored::kFloat64},
                           {"data/ip/1", {2}, {-1, 0.25}},
                           {"data/gone/0", {1}, {7}}});
  auto net = MakeNet(OneIpNet(), 1);
  net->CopyTrainedLayersFrom(file);
  const auto& blobs = net->layer_by_name("ip")->blobs();
  ExpectExactValues(blobs[0]->cpu_data(), {1, 2, 3, 4, 5, -6.5f}, "ip weights");
  ExpectExactValues(blobs[1]->cpu_data(), {-1, 0.25f}, "ip bias");
}

TEST(NetHdf5Test, FilesThatDoNotFitAreErrors) {
  const std::string dir = MakeTempDir("net_hdf5");
  auto net = MakeNet(OneIpNet(), 1);
  auto error_for = [&](const std::vector<Hdf5TestDataset>& datasets) {
    const std::string file = dir + "/w.h5";
    WriteHdf5TestFile(file, datasets);
    return ErrorOf([&] { net->CopyTrainedLayersFrom(file); });
  };
  const std::string file = dir + "/w.h5";
  EXPECT_EQ(error_for({{"data/ip/0", {2, 5}, std::vector<double>(10)}, {"data/ip/1", {2}, {0, 0}}}),
            file + ": layer 'ip' blob 0: the weights have shape 2x5, the net expects 2x3");
  EXPECT_EQ(error_for({{"data/ip/0", {2, 3}, std::vector<double>(6)}}),
            file +
                ": layer 'ip' blob 1: the weights have no dataset 'data/ip/1', the net "
                "expects 2 blob(s)");
  EXPECT_EQ(error_for({{"data/ip/0", {2, 3}, std::vector<double>(6)},
                       {"data/ip/1", {2}, {0, 0}},
                       {"data/ip/2", {1}, {0}}}),
            file +
                ": layer 'ip': the weights hold more than 2 blob(s) (dataset 'data/ip/2'), "
                "the net expects 2");
  EXPECT_EQ(error_for({{"weights/ip/0", {2, 3}, std::vector<double>(6)}}),
            file + ": no group 'data' (BVLC Caffe's HDF5 weights hold data/<layer>/<blob>)");

  const std::string absent = dir + "/absent.h5";
  EXPECT_EQ(ErrorOf([&] { net->CopyTrainedLayersFrom(absent); }),
            absent + ": cannot open file (No such file or directory)");
  const std::string junk = dir + "/junk.h5";
  WriteFileAtomically(junk, "a .caffemodel renamed, perhaps");
  EXPECT_EQ(ErrorOf([&] { net->CopyTrainedLayersFrom(junk); }), junk + ": not an HDF5 file");
}

}  // namespace
}  // namespace caffe
