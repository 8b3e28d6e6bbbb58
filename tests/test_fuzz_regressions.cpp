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
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "caffe/common.hpp"
#include "caffe/data/data_transformer.hpp"
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

fuzz::Outcome ReplayFinding(fuzz::Outcome (*entry)(const uint8_t*, size_t), const char* target,
                            const char* name) {
  return Replay(entry, kFuzzDir / "regressions" / target / name);
}

// Legacy num/channels/height/width in a weight file: negative pairs that multiply to
// the right count, and products past int64, must both be refused (the second was
// signed overflow, undefined behaviour, before).
TEST(FuzzRegressionFindings, LegacyWeightDimensionsAreValidated) {
  for (const char* name : {"legacy_dims_negative.caffemodel", "legacy_dims_overflow.caffemodel"}) {
    EXPECT_EQ(ReplayFinding(fuzz::Caffemodel, "fuzz_caffemodel", name), fuzz::Outcome::kRejected)
        << name;
  }
}

// Unsigned layer fields past INT_MAX became negative ints: an axis of -1 indexed a
// vector out of bounds (Concat, Slice), 2 * pad overflowed (Pooling), a window of -1
// was accepted (LRN). Each net must now be refused with caffe::Error.
TEST(FuzzRegressionFindings, UnsignedLayerFieldsAreValidated) {
  for (const char* name :
       {"concat_dim_unsigned_wrap.prototxt", "slice_dim_unsigned_wrap.prototxt",
        "pooling_pad_overflow.prototxt", "pooling_pad_unsigned_wrap.prototxt",
        "lrn_local_size_unsigned_wrap.prototxt"}) {
    EXPECT_EQ(ReplayFinding(fuzz::NetPrototxt, "fuzz_net_prototxt", name),
              fuzz::Outcome::kRejected)
        << name;
  }
}

// A datum whose declared shape its payload does not fill is refused when its shape is
// inferred, before a data layer sizes (and allocates) its batch by that shape.
TEST(FuzzRegressionFindings, DatumShapeIsCheckedBeforeAllocation) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(TransformationParameter(), TRAIN, rng);
  Datum datum;
  datum.set_channels(1);
  datum.set_height(65536);
  datum.set_width(65536);
  datum.set_data("x");
  EXPECT_THROW(transformer.InferBlobShape(datum), Error);
  datum.set_channels(1 << 30);
  datum.set_height(1 << 30);
  datum.set_width(1 << 30);
  datum.clear_data();
  EXPECT_THROW(transformer.InferBlobShape(datum), Error);
  for (const char* name : {"shape_larger_than_payload.datum", "shape_overflows_int64.datum"}) {
    EXPECT_EQ(ReplayFinding(fuzz::DatumTransform, "fuzz_datum_transform", name),
              fuzz::Outcome::kRejected)
        << name;
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
