// Every public Caffe model file in ../shared/compat parses and upgrades unchanged.
// Running them is covered by the layer-library suites (test_model_zoo.cpp).
#include <dirent.h>
#include <gtest/gtest.h>

#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {

vector<string> CompatFiles() {
  vector<string> files;
  const string dir = CompatDir();
  if (dir.empty()) return files;
  DIR* d = opendir(dir.c_str());
  while (dirent* entry = readdir(d)) {
    const string name = entry->d_name;
    if (name.size() > 9 && name.substr(name.size() - 9) == ".prototxt") files.push_back(dir + "/" + name);
  }
  closedir(d);
  return files;
}

TEST(CompatTest, EveryNetAndSolverParsesAndUpgrades) {
  const vector<string> files = CompatFiles();
  if (files.empty()) GTEST_SKIP() << "../shared/compat is absent";
  int nets = 0, solvers = 0;
  for (const string& file : files) {
    if (file.find("solver") != string::npos) {
      SolverParameter param;
      EXPECT_NO_THROW(ReadSolverParamsFromTextFile(file, &param)) << file;
      EXPECT_GT(param.max_iter(), 0) << file;
      ++solvers;
    } else {
      NetParameter param;
      EXPECT_NO_THROW(ReadNetParamsFromTextFile(file, &param)) << file;
      EXPECT_GT(param.layer_size(), 0) << file;
      EXPECT_EQ(param.input_size(), 0) << file << ": legacy inputs should have been upgraded";
      ++nets;
    }
  }
  EXPECT_GE(nets, 7);
  EXPECT_GE(solvers, 3);
}

TEST(CompatTest, LegacyResNetInputsBecomeInputLayer) {
  const string dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/compat is absent";
  NetParameter param;
  ReadNetParamsFromTextFile(dir + "/kaiminghe__ResNet-50-deploy.prototxt", &param);
  ASSERT_EQ(param.layer(0).type(), "Input");
  ASSERT_EQ(param.layer(0).input_param().shape_size(), 1);
  EXPECT_EQ(param.layer(0).input_param().shape(0).dim_size(), 4);
  EXPECT_EQ(param.layer(0).input_param().shape(0).dim(1), 3);
}

}  // namespace caffe
