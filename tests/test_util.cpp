#include "test_util.hpp"

#include <gtest/gtest.h>
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

}  // namespace caffe
