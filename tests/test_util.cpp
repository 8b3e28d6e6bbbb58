#include "test_util.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>

#include "caffe/util/io.hpp"

namespace caffe {

void SetValues(Blob* blob, const std::vector<float>& values) {
  ASSERT_EQ(blob->count(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), blob->mutable_cpu_data());
}

void FillDistinct(Blob* blob, uint64_t seed) {
  std::vector<int64_t> order(blob->count());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (int64_t i = 0; i < blob->count(); ++i) {
    blob->mutable_cpu_data()[i] = 0.05f * static_cast<float>(order[i] - blob->count() / 2);
  }
}

void ExpectExactValues(const float* actual, const std::vector<float>& expected, const char* what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i], expected[i]) << what << " element " << i;
  }
}

void FillUniform(Blob* blob, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* data = blob->mutable_cpu_data();
  for (int64_t i = 0; i < blob->count(); ++i) data[i] = dist(rng);
}

void FillGaussian(Blob* blob, float stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, stddev);
  float* data = blob->mutable_cpu_data();
  for (int64_t i = 0; i < blob->count(); ++i) data[i] = dist(rng);
}

LayerParameter ParseLayer(const std::string& text) {
  LayerParameter param;
  ParseProtoFromText(text, "<test layer>", &param);
  return param;
}

NetParameter ParseNet(const std::string& text) {
  NetParameter param;
  ParseProtoFromText(text, "<test net>", &param);
  return param;
}

SolverParameter ParseSolver(const std::string& text) {
  SolverParameter param;
  ParseProtoFromText(text, "<test solver>", &param);
  return param;
}

shared_ptr<Solver> MakeSgdSolver(const std::string& net_text) {
  SolverParameter param = ParseSolver(
      "base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' max_iter: 100 "
      "random_seed: 7 display: 0 snapshot_after_train: false");
  *param.mutable_net_param() = ParseNet(net_text);
  return SolverRegistry::CreateSolver(param, std::make_shared<Context>());
}

std::string MakeTempDir(const std::string& tag) {
  std::string base = std::string(CAFFE_BINARY_DIR) + "/test_tmp";
  // A test binary run on another machine (the GPU check carries them) has no build
  // folder there: the system's temporary folder stands in.
  if (::mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
    const char* tmp = std::getenv("TMPDIR");
    base = std::string(tmp && *tmp ? tmp : "/tmp") + "/caffe_test_tmp";
    ::mkdir(base.c_str(), 0755);
  }
  std::string pattern = base + "/" + tag + "_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  char* dir = ::mkdtemp(buf.data());
  EXPECT_NE(dir, nullptr);
  return dir ? std::string(dir) : base;
}

std::string CompatDir() {
  const std::string dir = CAFFE_COMPAT_DIR;
  return FileExists(dir + "/README.md") ? dir : std::string();
}

int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

void WriteHdf5TestFile(const std::string& path, const std::vector<Hdf5TestDataset>& datasets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  for (const Hdf5TestDataset& d : datasets) {
    int64_t count = 1;
    for (int64_t dim : d.shape) count *= dim;
    EXPECT_EQ(count, static_cast<int64_t>(d.values.size())) << path << ": " << d.name;
    const std::vector<hsize_t> dims(d.shape.begin(), d.shape.end());
    const hid_t space = dims.empty()
                            ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t stored = d.stored == Hdf5TestDataset::Stored::kFloat64 ? H5T_IEEE_F64LE
                         : d.stored == Hdf5TestDataset::Stored::kInt32 ? H5T_STD_I32LE
                                                                       : H5T_IEEE_F32LE;
    const hid_t dataset =
        H5Dcreate2(file, d.name.c_str(), stored, space, links, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(dataset, 0) << path << ": " << d.name;
    // The library converts the doubles to the stored type.
    if (dataset >= 0 && count > 0 && count == static_cast<int64_t>(d.values.size())) {
      EXPECT_GE(
          H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()), 0)
          << path << ": " << d.name;
    }
    if (dataset >= 0) H5Dclose(dataset);
    H5Sclose(space);
  }
  H5Pclose(links);
  H5Fclose(file);
}

Hdf5TestDataset ReadHdf5TestDataset(const std::string& path, const std::string& name) {
  Hdf5TestDataset result;
  result.name = name;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  if (file < 0) return result;
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << path << ": no dataset " << name;
  if (dataset >= 0) {
    const hid_t space = H5Dget_space(dataset);
    std::vector<hsize_t> dims(static_cast<size_t>(std::max(0, H5Sget_simple_extent_ndims(space))));
    if (!dims.empty()) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    result.shape.assign(dims.begin(), dims.end());
    int64_t count = 1;
    for (int64_t dim : result.shape) count *= dim;
    const hid_t type = H5Dget_type(dataset);
    result.stored = H5Tget_class(type) == H5T_INTEGER ? Hdf5TestDataset::Stored::kInt32
                    : H5Tget_size(type) == 8          ? Hdf5TestDataset::Stored::kFloat64
                                                      : Hdf5TestDataset::Stored::kFloat32;
    H5Tclose(type);
    result.values.resize(static_cast<size_t>(count));
    if (count > 0) {
      EXPECT_GE(
          H5Dread(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, result.values.data()),
          0)
          << path << ": " << name;
    }
    H5Sclose(space);
    H5Dclose(dataset);
  }
  H5Fclose(file);
  return result;
}

std::vector<std::string> Hdf5TestGroupMembers(const std::string& path, const std::string& group) {
  std::vector<std::string> names;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  if (file < 0) return names;
  const hid_t id = H5Gopen2(file, group.c_str(), H5P_DEFAULT);
  EXPECT_GE(id, 0) << path << ": no group " << group;
  H5G_info_t info;
  if (id >= 0 && H5Gget_info(id, &info) >= 0) {
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[1024] = {0};
      H5Lget_name_by_idx(id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof(name), H5P_DEFAULT);
      names.push_back(name);
    }
  }
  if (id >= 0) H5Gclose(id);
  H5Fclose(file);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace caffe
