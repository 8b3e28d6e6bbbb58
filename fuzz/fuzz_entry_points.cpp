// Bodies of the fuzz targets; see fuzz_entry_points.hpp. Inputs that need a file (the
// weight loader and the IDX reader take paths) are written to a private temporary
// folder first, so the fuzzers run the same code the tools do.
#include "fuzz_entry_points.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/data/data_transformer.hpp"
#include "caffe/data/idx_reader.hpp"
#include "caffe/net.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/util/host_memory_limit.hpp"
#include "caffe/util/io.hpp"

namespace caffe {
namespace fuzz {

namespace {

// LeNet's layer sequence at a tenth of the size, plus BatchNorm, Scale and PReLU, whose
// extra blobs (running statistics, per-channel slopes) the weight loader must also fit.
const char kCaffemodelNet[] = R"(name: "fuzz_lenet"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 2 dim: 1 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "PReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "prob" type: "Softmax" bottom: "ip2" top: "prob" }
)";

// A folder only this process writes to; /dev/shm keeps the fuzzers off the disk.
// Held by a never-destroyed pointer: the exit handler that removes the folder must
// still be able to read its name after static destructors have run.
const std::string& ScratchDir() {
  static const std::string* const dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string root = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (base ? base : "/tmp");
    std::string pattern = root + "/caffe_fuzz_XXXXXX";
    CHECK(::mkdtemp(pattern.data())) << "cannot create a scratch folder under " << root;
    return new std::string(pattern);
  }();
  static const bool cleanup_registered = [] {
    // Removed at exit, so repeated fuzzer and test runs leave nothing behind.
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(*dir, ignored);
    });
    return true;
  }();
  (void)cleanup_registered;
  return *dir;
}

std::string WriteScratch(const std::string& name, const char* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  CHECK(out.good()) << "cannot write " << path;
  return path;
}

shared_ptr<Context> FreshContext() { return std::make_shared<Context>(Context::kDefaultSeed); }

}  // namespace

void Initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    FLAGS_logtostderr = true;
    FLAGS_minloglevel = 3;  // FATAL only: CHECK failures still print before aborting
    SetHostMemoryLimit(kHostMemoryLimitBytes);
    // One thread: sanitizers are slow with OpenBLAS's pool, and findings reproduce.
    SetNumThreads(1);
  });
}

const char* CaffemodelNetText() { return kCaffemodelNet; }

Outcome NetPrototxt(const uint8_t* data, size_t size) {
  Initialize();
  if (size > kMaxPrototxtBytes) return Outcome::kRejected;
  NetParameter param;
  try {
    ParseProtoFromText(std::string(reinterpret_cast<const char*>(data), size), "fuzz.prototxt",
                       &param);
  } catch (const Error&) {
    return Outcome::kRejected;
  }
  bool accepted = false;
  for (Phase phase : {TRAIN, TEST}) {
    NetParameter in_phase = param;
    in_phase.mutable_state()->set_phase(phase);
    try {
      Net net(in_phase, FreshContext(), "fuzz.prototxt");
      accepted = true;
      // Small nets also run a forward and backward pass: shape bugs that construction
      // does not touch (window arithmetic, indexing) surface there. The budget keeps
      // one pass to milliseconds even for a convolution with a huge kernel.
      int64_t floats = 0;
      for (const auto& blob : net.blobs()) floats += blob->count();
      for (const auto& blob : net.params()) floats += blob->count();
      if (floats <= kMaxPassFloats) {
        net.Forward();
        net.Backward();
      }
    } catch (const Error&) {
    }
  }
  return accepted ? Outcome::kAccepted : Outcome::kRejected;
}

Outcome Caffemodel(const uint8_t* data, size_t size) {
  Initialize();
  if (size > kMaxCaffemodelBytes) return Outcome::kRejected;
  NetParameter net_param;
  ParseProtoFromText(kCaffemodelNet, "fuzz_lenet", &net_param);
  net_param.mutable_state()->set_phase(TEST);
  Net net(net_param, FreshContext(), "fuzz_lenet");
  const std::string path =
      WriteScratch("weights.caffemodel", reinterpret_cast<const char*>(data), size);
  try {
    net.CopyTrainedLayersFrom(path);
  } catch (const Error&) {
    return Outcome::kRejected;
  }
  // Whatever values were loaded (NaN, infinities, denormals), a forward pass must not
  // misbehave.
  float loss = 0;
  net.Forward(&loss);
  return Outcome::kAccepted;
}

Outcome DatumTransform(const uint8_t* data, size_t size) {
  Initialize();
  if (size > kMaxDatumBytes) return Outcome::kRejected;
  Datum datum;
  if (!datum.ParseFromArray(data, static_cast<int>(size))) return Outcome::kRejected;
  struct Setting {
    const char* text;
    Phase phase;
  };
  static const Setting kSettings[] = {
      {"", TRAIN},
      {"scale: 0.00390625 mirror: true crop_size: 2", TRAIN},
      {"crop_size: 3 mean_value: 104 mean_value: 117 mean_value: 123", TEST},
      {"mean_value: 128 scale: 2 force_gray: true", TRAIN},
  };
  std::mt19937_64 rng(1);
  bool accepted = false;
  for (const Setting& setting : kSettings) {
    TransformationParameter param;
    ParseProtoFromText(setting.text, "transform_param", &param);
    try {
      DataTransformer transformer(param, setting.phase, rng);
      const vector<int64_t> shape = transformer.InferBlobShape(datum);
      Blob blob(shape);
      transformer.Transform(datum, &blob);
      accepted = true;
    } catch (const Error&) {
    }
  }
  return accepted ? Outcome::kAccepted : Outcome::kRejected;
}

Outcome Idx(const uint8_t* data, size_t size) {
  Initialize();
  if (size > kMaxIdxBytes || size < 2) return Outcome::kRejected;
  const size_t declared = (size_t{data[0]} << 8) | data[1];
  const size_t labels_size = std::min(declared, size - 2);
  const char* labels = reinterpret_cast<const char*>(data) + 2;
  const std::string labels_path = WriteScratch("labels.idx", labels, labels_size);
  const std::string images_path =
      WriteScratch("images.idx", labels + labels_size, size - 2 - labels_size);
  try {
    const IdxDataset dataset = IdxDataset::FromFiles(images_path, labels_path);
    Datum datum;
    std::string bytes;
    for (uint32_t i = 0; i < dataset.size(); ++i) {
      dataset.ToDatum(i, &datum);
      CHECK(datum.SerializeToString(&bytes));
      Datum back;
      CHECK(back.ParseFromString(bytes));
      CHECK_EQ(back.data().size(), static_cast<size_t>(dataset.rows()) * dataset.cols());
    }
  } catch (const Error&) {
    return Outcome::kRejected;
  }
  return Outcome::kAccepted;
}

}  // namespace fuzz
}  // namespace caffe
