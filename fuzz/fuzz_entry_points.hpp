// The bodies of the libFuzzer targets, shared with tests/test_fuzz_regressions.cpp so
// every saved finding replays in the normal build. Each takes raw bytes, feeds them
// through one input path of the library, and returns normally whether the input was
// accepted or rejected with caffe::Error; anything else (another exception, a crash,
// a sanitizer report, a glog CHECK) is a finding.
#ifndef CAFFE_FUZZ_FUZZ_ENTRY_POINTS_HPP_
#define CAFFE_FUZZ_FUZZ_ENTRY_POINTS_HPP_

#include <cstddef>
#include <cstdint>

namespace caffe {
namespace fuzz {

enum class Outcome { kAccepted, kRejected };

// Inputs longer than this are skipped (kRejected): bigger texts only slow the fuzzer
// down without reaching new code.
constexpr size_t kMaxPrototxtBytes = 64 * 1024;
constexpr size_t kMaxCaffemodelBytes = 256 * 1024;
constexpr size_t kMaxDatumBytes = 64 * 1024;
constexpr size_t kMaxIdxBytes = 64 * 1024;
// Host memory the blobs of one input may hold at once (SetHostMemoryLimit): a
// fuzzed `dim: 100000000` becomes a caffe::Error instead of an out-of-memory kill.
constexpr size_t kHostMemoryLimitBytes = 256u << 20;

// fuzz_net_prototxt runs Forward and Backward only on nets whose blobs and weights
// hold at most this many floats in all.
constexpr int64_t kMaxPassFloats = 16 * 1024;

// Quiets logging and sets the memory limit; the entry points call it themselves.
void Initialize();

// Text NetParameter -> Net construction in TRAIN and in TEST (and, for small nets,
// one Forward and Backward in each).
Outcome NetPrototxt(const uint8_t* data, size_t size);
// .caffemodel bytes -> Net::CopyTrainedLayersFrom on a fixed small LeNet-like net,
// then one forward pass with the loaded weights.
Outcome Caffemodel(const uint8_t* data, size_t size);
// Serialized Datum -> DataTransformer (several fixed TransformationParameters).
Outcome DatumTransform(const uint8_t* data, size_t size);
// IDX pair -> IdxDataset -> Datum records. Input layout: byte 0 (mod the size) is the
// length of the labels file, which follows; the rest is the images file. Either may
// be gzipped.
Outcome Idx(const uint8_t* data, size_t size);

// The fixed net Caffemodel() loads weights into (text prototxt), for the corpus
// generator.
const char* CaffemodelNetText();

}  // namespace fuzz
}  // namespace caffe

#endif  // CAFFE_FUZZ_FUZZ_ENTRY_POINTS_HPP_
