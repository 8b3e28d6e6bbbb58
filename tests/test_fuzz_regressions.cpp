// Replays the fuzz targets' inputs through the same entry points the libFuzzer
// binaries use (fuzz/fuzz_entry_points.cpp): every saved finding in
// fuzz/regressions/<target>/ must now be handled (accepted or rejected with
// caffe::Error, no crash), and every seed in fuzz/corpus/<target>/ must be accepted
// unless its name starts with "reject_".
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "caffe/common.hpp"
#include "fuzz_entry_points.hpp"

namespace caffe {
namespace {

namespace fs = std::filesystem;
using EntryPoint = std::function<fuzz::Outcome(const uint8_t*, size_t)>;

const fs::path kFuzzDir = fs::path(CAFFE_SOURCE_DIR) / "fuzz";

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

fuzz::Outcome Replay(const EntryPoint& entry, const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

struct Target {
  const char* name;
  fuzz::Outcome (*entry)(const uint8_t*, size_t);
};

class FuzzRegressionTest : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzRegressionTest, SeedsAreAccepted) {
  const Target target = GetParam();
  const auto seeds = FilesIn(kFuzzDir / "corpus" / target.name);
  ASSERT_GE(seeds.size(), 3u) << "the seed corpus of " << target.name << " is missing";
  for (const auto& file : seeds) {
    const bool expect_reject = file.filename().string().rfind("reject_", 0) == 0;
    fuzz::Outcome outcome = fuzz::Outcome::kRejected;
    EXPECT_NO_THROW(outcome = Replay(target.entry, file)) << file;
    EXPECT_EQ(outcome, expect_reject ? fuzz::Outcome::kRejected : fuzz::Outcome::kAccepted)
        << file;
  }
}

TEST_P(FuzzRegressionTest, FindingsAreHandled) {
  const Target target = GetParam();
  for (const auto& file : FilesIn(kFuzzDir / "regressions" / target.name)) {
    // A crash ends the suite; an exception other than caffe::Error fails here.
    EXPECT_NO_THROW(Replay(target.entry, file)) << file;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegressionTest,
                         ::testing::Values(Target{"fuzz_net_prototxt", fuzz::NetPrototxt},
                                           Target{"fuzz_caffemodel", fuzz::Caffemodel},
                                           Target{"fuzz_datum_transform", fuzz::DatumTransform},
                                           Target{"fuzz_idx", fuzz::Idx}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace caffe
