// Can the Data layer keep a CPU trainer fed? Measures, in one run and side by side,
//   - the Data layer alone: records per second out of Forward (prefetch thread, LMDB
//     read, Datum parse, transform, copy to the top), and
//   - the training it feeds: images per second of full SGD steps,
// and prints their ratio (the layer should be >= 10x faster than training, so that
// prefetching hides it). Two cases:
//   1. Fashion-MNIST LMDB (1x28x28, scale), models/lenet_fashion/train_val.prototxt's
//      own TRAIN Data layer, against LeNet SGD steps reading the same LMDB;
//   2. a 3x256x256 uint8 LMDB this bench writes (random pixels) with crop 227 +
//      mirror + mean_value, batch 16, against AlexNet SGD steps on its synthetic stage
//      (models/alexnet/train_val.prototxt, DummyData batch 16).
// Measurements alternate between the data layer and the trainer for --rounds rounds
// (median reported), so that load from other processes hits both alike.
//
// Run from the repository root after `bash data/get_fashion_mnist.sh`:
//   build/bench/data_layer_bench [--rounds 3] [--data-seconds 2] [--lenet-steps 40]
//       [--alexnet-steps 3] [--records 320] [--no-alexnet] [--threads N]
//       [--fashion-lmdb data/fashion_mnist/train_lmdb] [--work-dir /tmp]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <unistd.h>

#include "caffe/data/db.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"

namespace {

using caffe::Blob;
using caffe::Context;
using caffe::LayerParameter;
using caffe::NetParameter;
using caffe::SolverParameter;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string fashion_lmdb = "data/fashion_mnist/train_lmdb";
  std::string work_dir;  // where the generated LMDB goes; default: the system temp dir
  int rounds = 3;
  double data_seconds = 2.0;  // minimum time per data-layer measurement
  int lenet_steps = 40;
  int alexnet_steps = 3;
  int records = 320;
  bool alexnet = true;
  int threads = 0;  // 0: the library's default
};

[[noreturn]] void Usage(const char* problem) {
  std::fprintf(stderr, "data_layer_bench: %s\n", problem);
  std::fprintf(stderr,
               "usage: data_layer_bench [--rounds N] [--data-seconds S] [--lenet-steps N]\n"
               "         [--alexnet-steps N] [--records N] [--no-alexnet] [--threads N]\n"
               "         [--fashion-lmdb PATH] [--work-dir DIR]\n");
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value after " + flag).c_str());
      return argv[++i];
    };
    if (flag == "--rounds") {
      options.rounds = std::atoi(value().c_str());
    } else if (flag == "--data-seconds") {
      options.data_seconds = std::atof(value().c_str());
    } else if (flag == "--lenet-steps") {
      options.lenet_steps = std::atoi(value().c_str());
    } else if (flag == "--alexnet-steps") {
      options.alexnet_steps = std::atoi(value().c_str());
    } else if (flag == "--records") {
      options.records = std::atoi(value().c_str());
    } else if (flag == "--no-alexnet") {
      options.alexnet = false;
    } else if (flag == "--threads") {
      options.threads = std::atoi(value().c_str());
    } else if (flag == "--fashion-lmdb") {
      options.fashion_lmdb = value();
    } else if (flag == "--work-dir") {
      options.work_dir = value();
    } else {
      Usage(("unknown flag " + flag).c_str());
    }
  }
  if (options.rounds < 1 || options.data_seconds <= 0 || options.lenet_steps < 1 ||
      options.alexnet_steps < 1 || options.records < 1) {
    Usage("counts and times must be positive");
  }
  return options;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The model's TRAIN-phase Data layer (the one a training run would use).
LayerParameter TrainDataLayer(const NetParameter& net) {
  for (const LayerParameter& layer : net.layer()) {
    if (layer.type() != "Data") continue;
    for (const caffe::NetStateRule& rule : layer.include()) {
      if (rule.has_phase() && rule.phase() == caffe::TRAIN) return layer;
    }
  }
  LOG(FATAL) << "no TRAIN Data layer in " << net.name();
  return {};
}

// A Data layer set up on its own; Forward pulls batches out of its prefetch queue.
class DataLayerProbe {
 public:
  explicit DataLayerProbe(LayerParameter param) {
    param.set_phase(caffe::TRAIN);
    layer_ = caffe::LayerRegistry::CreateLayer(param);
    tops_ = {&data_, &label_};
    layer_->SetUp({}, tops_);
    batch_size_ = static_cast<int>(data_.shape(0));
    prefetch_ = static_cast<int>(param.data_param().prefetch());
  }

  // Records per second over at least `min_seconds` (and 20 batches). Batches the
  // thread filled while the trainer ran are drained first, so the clock sees the
  // steady state, where Forward waits for the prefetch thread.
  double RecordsPerSecond(double min_seconds) {
    for (int i = 0; i <= prefetch_; ++i) layer_->Forward({}, tops_);
    int batches = 0;
    const Clock::time_point start = Clock::now();
    double elapsed = 0;
    do {
      layer_->Forward({}, tops_);
      ++batches;
      elapsed = Seconds(start);
    } while (elapsed < min_seconds || batches < 20);
    return static_cast<double>(batches) * batch_size_ / elapsed;
  }

  int batch_size() const { return batch_size_; }
  const Blob& data() const { return data_; }

 private:
  std::shared_ptr<caffe::Layer> layer_;
  Blob data_, label_;
  std::vector<Blob*> tops_;
  int batch_size_ = 0;
  int prefetch_ = 0;
};

// A solver on the model's train net, quiet (no display, tests or snapshots).
class TrainerProbe {
 public:
  TrainerProbe(const std::string& solver_file, const NetParameter& net,
               const std::vector<std::string>& stages) {
    SolverParameter param;
    caffe::ReadSolverParamsFromTextFile(solver_file, &param);
    param.clear_net();
    *param.mutable_net_param() = net;
    for (const std::string& stage : stages) param.mutable_train_state()->add_stage(stage);
    param.clear_test_iter();
    param.clear_test_state();
    param.set_test_interval(0);
    param.set_display(0);
    param.set_snapshot(0);
    param.set_snapshot_after_train(false);
    param.set_solver_mode(SolverParameter::CPU);
    param.set_max_iter(1 << 30);
    solver_ = caffe::SolverRegistry::CreateSolver(param, std::make_shared<Context>(),
                                                  solver_file);
    const Blob& data = *solver_->net()->blob_by_name("data");
    batch_size_ = static_cast<int>(data.shape(0));
    solver_->Step(1);  // first-touch allocations and page faults stay out of the timing
  }

  double ImagesPerSecond(int steps) {
    const Clock::time_point start = Clock::now();
    solver_->Step(steps);
    return static_cast<double>(steps) * batch_size_ / Seconds(start);
  }

  int batch_size() const { return batch_size_; }
  float loss() const { return solver_->smoothed_loss(); }

 private:
  std::shared_ptr<caffe::Solver> solver_;
  int batch_size_ = 0;
};

// `records` random 3x256x256 uint8 images with labels 0..999, written through the
// project's db API, as convert_imageset would store decoded ImageNet images.
void WriteImageNetLikeLmdb(const std::string& path, int records) {
  constexpr int kChannels = 3, kSide = 256;
  auto db = caffe::db::GetDB(caffe::DataParameter::LMDB);
  db->Open(path, caffe::db::OpenMode::NEW);
  std::mt19937_64 rng(7);
  std::string pixels(kChannels * kSide * kSide, '\0');
  auto txn = db->NewTransaction();
  for (int i = 0; i < records; ++i) {
    for (size_t k = 0; k < pixels.size(); k += 8) {
      const uint64_t bits = rng();
      std::memcpy(&pixels[k], &bits, std::min<size_t>(8, pixels.size() - k));
    }
    caffe::Datum datum;
    datum.set_channels(kChannels);
    datum.set_height(kSide);
    datum.set_width(kSide);
    datum.set_data(pixels);
    datum.set_label(i % 1000);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    txn->Put(key, datum.SerializeAsString());
  }
  txn->Commit();
}

struct CaseResult {
  std::string name;
  std::string data_desc;
  std::string train_desc;
  double data_rate = 0;   // records/s, median over rounds
  double train_rate = 0;  // images/s, median over rounds
  double data_min = 0, data_max = 0, train_min = 0, train_max = 0;
};

CaseResult Measure(const std::string& name, const std::string& data_desc,
                   const std::string& train_desc, DataLayerProbe* data, TrainerProbe* trainer,
                   int steps, const Options& options) {
  std::vector<double> data_rates, train_rates;
  for (int round = 0; round < options.rounds; ++round) {
    data_rates.push_back(data->RecordsPerSecond(options.data_seconds));
    train_rates.push_back(trainer->ImagesPerSecond(steps));
    std::fprintf(stderr, "%s round %d: data %.0f records/s, training %.1f images/s (loss %.3f)\n",
                 name.c_str(), round + 1, data_rates.back(), train_rates.back(),
                 trainer->loss());
  }
  CaseResult result{name, data_desc, train_desc};
  result.data_rate = Median(data_rates);
  result.train_rate = Median(train_rates);
  result.data_min = *std::min_element(data_rates.begin(), data_rates.end());
  result.data_max = *std::max_element(data_rates.begin(), data_rates.end());
  result.train_min = *std::min_element(train_rates.begin(), train_rates.end());
  result.train_max = *std::max_element(train_rates.begin(), train_rates.end());
  return result;
}

std::string Rate(double median, double lo, double hi) {
  char text[96];
  if (median >= 100) {
    std::snprintf(text, sizeof(text), "%.0f (%.0f-%.0f)", median, lo, hi);
  } else {
    std::snprintf(text, sizeof(text), "%.1f (%.1f-%.1f)", median, lo, hi);
  }
  return text;
}

NetParameter ReadNet(const std::string& file) {
  NetParameter net;
  caffe::ReadNetParamsFromTextFile(file, &net);
  return net;
}

// Points every Data layer of `net` at `source`.
void SetDataSource(NetParameter* net, const std::string& source) {
  for (LayerParameter& layer : *net->mutable_layer()) {
    if (layer.type() == "Data") layer.mutable_data_param()->set_source(source);
  }
}

}  // namespace

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = google::GLOG_WARNING;  // net construction logs every layer
  FLAGS_logtostderr = true;
  const Options options = ParseOptions(argc, argv);
  if (options.threads > 0) caffe::SetNumThreads(options.threads);

  std::vector<CaseResult> results;
  std::vector<std::string> notes;
  try {
    // ---- 1. Fashion-MNIST: LeNet's own Data layer vs LeNet SGD steps ----
    const std::string lenet_dir = "models/lenet_fashion/";
    if (caffe::FileExists(options.fashion_lmdb + "/data.mdb")) {
      NetParameter lenet = ReadNet(lenet_dir + "train_val.prototxt");
      SetDataSource(&lenet, options.fashion_lmdb);
      DataLayerProbe data(TrainDataLayer(lenet));
      TrainerProbe trainer(lenet_dir + "solver_dense.prototxt", lenet, {});
      const std::string batch = std::to_string(data.batch_size());
      results.push_back(Measure("fashion-mnist", "Fashion-MNIST LMDB 1x28x28, scale, batch " + batch,
                                "LeNet SGD step, same LMDB, batch " +
                                    std::to_string(trainer.batch_size()),
                                &data, &trainer, options.lenet_steps, options));
    } else {
      notes.push_back("Fashion-MNIST case skipped: " + options.fashion_lmdb +
                      "/data.mdb not found (run `bash data/get_fashion_mnist.sh`)");
    }

    // ---- 2. ImageNet-like records: crop + mirror + mean vs AlexNet SGD steps ----
    namespace fs = std::filesystem;
    const fs::path work = options.work_dir.empty() ? fs::temp_directory_path()
                                                   : fs::path(options.work_dir);
    const fs::path lmdb = work / ("data_layer_bench_" + std::to_string(::getpid()) + "_lmdb");
    fs::remove_all(lmdb);
    const Clock::time_point write_start = Clock::now();
    WriteImageNetLikeLmdb(lmdb.string(), options.records);
    std::fprintf(stderr, "wrote %d 3x256x256 records in %.1f s\n", options.records,
                 Seconds(write_start));
    {
      LayerParameter param;
      caffe::ParseProtoFromText(
          "name: 'data' type: 'Data' top: 'data' top: 'label' "
          "transform_param { crop_size: 227 mirror: true "
          "  mean_value: 104 mean_value: 117 mean_value: 123 } "
          "data_param { source: '" + lmdb.string() + "' batch_size: 16 backend: LMDB }",
          "data_layer_bench", &param);
      DataLayerProbe data(param);
      const std::string data_desc = "generated LMDB 3x256x256 (" +
                                    std::to_string(options.records) +
                                    " records), crop 227 + mirror + mean_value, batch 16";
      if (options.alexnet) {
        const std::string alexnet_dir = "models/alexnet/";
        TrainerProbe trainer(alexnet_dir + "solver_dense.prototxt",
                             ReadNet(alexnet_dir + "train_val.prototxt"), {"synthetic"});
        results.push_back(Measure("imagenet-like", data_desc,
                                  "AlexNet SGD step, synthetic stage, batch " +
                                      std::to_string(trainer.batch_size()),
                                  &data, &trainer, options.alexnet_steps, options));
      } else {
        std::vector<double> rates;
        for (int round = 0; round < options.rounds; ++round) {
          rates.push_back(data.RecordsPerSecond(options.data_seconds));
        }
        CaseResult result{"imagenet-like", data_desc, "AlexNet not run (--no-alexnet)"};
        result.data_rate = Median(rates);
        result.data_min = *std::min_element(rates.begin(), rates.end());
        result.data_max = *std::max_element(rates.begin(), rates.end());
        results.push_back(result);
      }
    }
    fs::remove_all(lmdb);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }

  std::printf("Data layer vs training, median of %d rounds (min-max); %d BLAS/compute threads, "
              "%u hardware threads\n\n",
              options.rounds, caffe::NumThreads(), std::thread::hardware_concurrency());
  std::printf("| data layer | records/s | training | images/s | ratio |\n");
  std::printf("|---|---:|---|---:|---:|\n");
  for (const CaseResult& r : results) {
    std::printf("| %s | %s | %s | ", r.data_desc.c_str(),
                Rate(r.data_rate, r.data_min, r.data_max).c_str(), r.train_desc.c_str());
    if (r.train_rate > 0) {
      std::printf("%s | %.0fx |\n", Rate(r.train_rate, r.train_min, r.train_max).c_str(),
                  r.data_rate / r.train_rate);
    } else {
      std::printf("- | - |\n");
    }
  }
  for (const std::string& note : notes) std::printf("\n%s\n", note.c_str());
  return 0;
}
