// The `caffe` command: train, test, time and device_query, with BVLC Caffe's flags.
// Every user error ends in one `error:` line on stderr and exit status 1.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "caffe/common.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/sync/comm_deadline.hpp"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/transport.hpp"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/peak_memory.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "support/signal_handler.hpp"

#ifdef USE_MPI
#include <mpi.h>

#include "caffe/sync/mpi_communicator.hpp"
#endif

DEFINE_string(solver, "", "The solver definition protocol buffer text file (train).");
DEFINE_string(model, "", "The model definition protocol buffer text file (test, time).");
DEFINE_string(weights, "",
              "Pretrained weights (.caffemodel, or .h5 for BVLC's HDF5 layout) to initialise "
              "from, comma-separated for several; cannot be combined with -snapshot.");
DEFINE_string(snapshot, "", "A .solverstate to resume training from.");
DEFINE_int32(iterations, 50, "Iterations for test and time.");
DEFINE_string(gpu, "",
              "GPU id to run on (train/test/time), or 'all'. Empty: CPU unless the solver "
              "asks for GPU mode and a GPU exists.");
DEFINE_string(phase, "", "Network phase (TRAIN or TEST); time defaults to TRAIN, test to TEST.");
DEFINE_int32(level, 0, "Network level.");
DEFINE_string(stage, "", "Network stages, comma-separated.");
DEFINE_string(sigint_effect, "stop", "What SIGINT does during training: stop, snapshot, none.");
DEFINE_string(sighup_effect, "snapshot", "What SIGHUP does during training: stop, snapshot, none.");
DEFINE_int32(threads, 0,
             "CPU threads for BLAS and the project's loops (0: the cores of this machine "
             "divided by the ranks on it).");
DEFINE_string(engine, "DEFAULT",
              "What a layer's `engine: DEFAULT` means: DEFAULT (the engine measured faster "
              "per layer type; cuDNN on a GPU), CAFFE, DNNL or CUDNN (that engine for every "
              "such layer). A layer's explicit engine always wins.");
DEFINE_bool(memory_plan, true,
            "Let activations used at disjoint stretches of a pass share memory: the "
            "train net's gradients (Net::ShareActivationDiffs) and the values of test "
            "nets (Net::ShareActivationData); fold each Scale in place after a "
            "BatchNorm into the BatchNorm's passes (Net::FoldChannelScales); and, with "
            "-blocked_layouts, keep the activations between oneDNN convolutions in their "
            "blocked layout (Net::PlanChannelBlockedLayouts). Off also "
            "under debug_info or force_backward.");
DEFINE_bool(blocked_layouts, true,
            "With the memory plan, keep the activations between oneDNN convolutions in "
            "the convolutions' channel-blocked layout (Net::PlanChannelBlockedLayouts), "
            "with no reorders between them. The same values bit for bit either way.");
DEFINE_string(sync_stats, "",
              "Write the gradient exchange's per-iteration, per-blob statistics to this CSV "
              "(rank 0's view). A '%r' in the name gives every rank a file of its own, "
              "with %r replaced by the rank.");
DEFINE_string(stop_at_test_score, "",
              "OUTPUT=VALUE: stop training at the first test pass where the test net's "
              "OUTPUT (e.g. accuracy) is at least VALUE (a time-to-accuracy run). The "
              "Final line reports the training time, test passes excluded.");
DEFINE_double(comm_timeout, caffe::kDefaultCommTimeoutSeconds,
              "Seconds a rank waits for the others in one collective before it counts them "
              "as lost (a lost link, a hung rank): a warning at half of it, then an error "
              "that ends the job. 0 turns it off.");

namespace caffe {
namespace {

vector<string> SplitComma(const string& text) {
  vector<string> parts;
  std::stringstream in(text);
  string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) parts.push_back(item);
  }
  return parts;
}

DefaultEngine ParseEngineFlag(const string& text) {
  if (text == "DEFAULT") return DefaultEngine::MEASURED;
  if (text == "CAFFE") return DefaultEngine::CAFFE;
  if (text == "DNNL") return DefaultEngine::DNNL;
  if (text == "CUDNN") return DefaultEngine::CUDNN;
  ErrorBuilder() << "-engine: expected DEFAULT, CAFFE, DNNL or CUDNN, found '" << text << "'";
}

// The context every command builds its nets in; -engine goes into it here, so that
// layer creation reads nothing from the process.
std::shared_ptr<Context> MakeContext() {
  auto context = std::make_shared<Context>();
  context->set_default_engine(ParseEngineFlag(FLAGS_engine));
  return context;
}

Phase ParsePhase(const string& text, Phase fallback) {
  if (text.empty()) return fallback;
  if (text == "TRAIN") return TRAIN;
  if (text == "TEST") return TEST;
  ErrorBuilder() << "-phase: expected TRAIN or TEST, found '" << text << "'";
}

// Selects CPU or GPU for this process from -gpu and the solver's mode.
void ConfigureDevice(Context* context, bool solver_wants_gpu, int solver_device,
                     int local_rank = 0) {
  string gpu = FLAGS_gpu;
  if (gpu.empty() && solver_wants_gpu) {
    if (HasCudaDevice()) {
      gpu = std::to_string(solver_device);
    } else {
      LOG(WARNING) << "the solver asks for GPU mode but no GPU is available; using the CPU";
    }
  }
  if (gpu.empty()) {
    context->set_mode(Mode::CPU);
    return;
  }
  const int count = CudaDeviceCount();
  int device = 0;
  if (gpu == "all") {
    CAFFE_REQUIRE(count > 0) << "-gpu all: no GPU is available on this machine";
    device = local_rank % count;  // one rank per local GPU
  } else {
    char* end = nullptr;
    const long id = std::strtol(gpu.c_str(), &end, 10);
    CAFFE_REQUIRE(end && *end == '\0' && id >= 0)
        << "-gpu: expected a device id or 'all', found '" << gpu << "'";
    CAFFE_REQUIRE(id < count) << "-gpu " << gpu << ": unknown GPU id (" << count
                              << " GPU(s) available"
                              << (count == 0 ? "; this build or machine has no GPU" : "") << ")";
    device = static_cast<int>(id);
  }
#ifdef USE_CUDA
  CUDA_CHECK(cudaSetDevice(device));
#endif
  context->set_device_id(device);
  context->set_mode(Mode::GPU);
}

// OpenBLAS's pthread build keeps a second pool beside OpenMP's, and the two take turns
// on the same cores (CMakeLists.txt links the OpenMP build where it is installed).
void WarnIfBlasHasItsOwnPool(int threads) {
  if (threads > 1 && !BlasSharesOpenMpPool()) {
    LOG(WARNING) << "OpenBLAS runs its own threads beside OpenMP's (oneDNN and the layers' "
                 << "loops), so at " << threads << " threads the two pools take turns on the "
                 << "cores: install libopenblas0-openmp and rebuild, or run with -threads 1";
  }
}

// BLAS and the project's loops get this rank's share of the machine's cores, so
// several ranks on one machine do not oversubscribe it.
void ConfigureThreads(const Communicator& comm) {
  int threads = FLAGS_threads;
  if (threads <= 0) {
    threads = std::max(1, NumThreads() / std::max(1, comm.local_size()));
  }
  SetNumThreads(threads);
  WarnIfBlasHasItsOwnPool(threads);
}

void CopyWeights(const string& list, Solver* solver) {
  for (const string& file : SplitComma(list)) {
    LOG(INFO) << "Finetuning from " << file;
    solver->net()->CopyTrainedLayersFrom(file);
    for (const auto& test_net : solver->test_nets()) test_net->CopyTrainedLayersFrom(file);
  }
}

// The memory plans of train, test and time; what they share and save goes to the log.
void LogActivationSharing(const string& what, const Net::ActivationSharing& sharing) {
  if (!sharing.skipped.empty()) {
    LOG(INFO) << "Memory plan: " << what << " not shared (" << sharing.skipped << ")";
    return;
  }
  const double mb = 1024.0 * 1024.0;
  LOG(INFO) << "Memory plan: " << sharing.blobs << " " << what << " in " << sharing.buffers
            << " shared buffer(s): " << sharing.bytes_after / mb << " MB instead of "
            << sharing.bytes_before / mb << " MB ("
            << (sharing.bytes_before - sharing.bytes_after) / mb << " MB saved)";
}

void PlanBlockedLayouts(Net* net, const string& which) {
  if (!FLAGS_blocked_layouts) return;
  const Net::ChannelLayoutPlan layouts = net->PlanChannelBlockedLayouts();
  if (layouts.blobs > 0) {
    LOG(INFO) << "Layout plan (" << which << "): " << layouts.blobs << " activation blob(s) in "
              << layouts.regions << " region(s) kept in oneDNN's " << layouts.block
              << "-channel blocked layout (no reorders between their convolutions)";
  }
}

void ShareActivationDiffs(Net* net, bool solver_debug_info) {
  if (!FLAGS_memory_plan) return;
  if (solver_debug_info) {
    LOG(INFO) << "Memory plan: activation diffs not shared (the solver sets debug_info)";
    return;
  }
  LogActivationSharing("activation diffs", net->ShareActivationDiffs());
  const int folded = net->FoldChannelScales();
  if (folded > 0) {
    LOG(INFO) << "Memory plan: " << folded
              << " Scale layer(s) folded into the BatchNorm before them (one pass fewer "
                 "over the activations each way)";
  }
  PlanBlockedLayouts(net, "train net");
}

void ShareActivationData(Net* net, const string& which) {
  if (!FLAGS_memory_plan) return;
  LogActivationSharing(which + " activations", net->ShareActivationData());
  PlanBlockedLayouts(net, which);
}

int Train() {
  if (FLAGS_solver.empty()) std::cerr << gflags::ProgramUsage() << "\n";
  CAFFE_REQUIRE(!FLAGS_solver.empty()) << "train needs -solver=FILE (see caffe -help)";
  CAFFE_REQUIRE(FLAGS_weights.empty() || FLAGS_snapshot.empty())
      << "give -weights or -snapshot, not both (-weights starts fresh from given weights, "
         "-snapshot resumes)";
  SolverParameter param;
  ReadSolverParamsFromTextFile(FLAGS_solver, &param);
  // -level and -stage select the train net's state, as in Caffe.
  param.mutable_train_state()->set_level(FLAGS_level);
  for (const string& stage : SplitComma(FLAGS_stage)) param.mutable_train_state()->add_stage(stage);

  if (param.has_sync_param()) ValidateSyncParameter(param.sync_param(), FLAGS_solver);
  SetCommTimeoutSeconds(FLAGS_comm_timeout);

  // One process per device: under mpirun every rank runs this same code and the
  // communicator says which rank it is. Started alone, it is rank 0 of 1.
  std::shared_ptr<Communicator> comm = CreateCommunicator();
  auto context = MakeContext();
  context->set_rank(comm->rank(), comm->size());
  // Rank 0 speaks for the job; the others report warnings and errors only.
  if (comm->rank() != 0) FLAGS_minloglevel = google::GLOG_WARNING;
  ConfigureThreads(*comm);
  ConfigureDevice(context.get(), param.solver_mode() == SolverParameter::GPU, param.device_id(),
                  comm->local_rank());
  const SolverAction sigint = ParseSignalEffect("sigint_effect", FLAGS_sigint_effect);
  const SolverAction sighup = ParseSignalEffect("sighup_effect", FLAGS_sighup_effect);
  SignalHandler signals(sigint, sighup);

  shared_ptr<Solver> solver = SolverRegistry::CreateSolver(param, context, FLAGS_solver);
  solver->set_action_function(signals.GetActionFunction());
  ShareActivationDiffs(solver->net().get(), param.debug_info());
  if (!param.debug_info()) {
    for (const auto& test_net : solver->test_nets()) ShareActivationData(test_net.get(), "test net");
  }
  if (!FLAGS_weights.empty()) CopyWeights(FLAGS_weights, solver.get());
  if (comm->size() > 1 || param.has_sync_param()) {
    // The one place the job's communicators are made: the exchange gets them.
    Transport transport = CreateTransport(comm, context->mode() == Mode::GPU);
    const string device_backend = transport.device ? transport.device->backend() : "";
    std::shared_ptr<GradientExchange> exchange =
        CreateGradientExchange(param.sync_param(), std::move(transport));
    const size_t rank_mark = FLAGS_sync_stats.find("%r");
    if (rank_mark != string::npos) {
      string path = FLAGS_sync_stats;
      path.replace(rank_mark, 2, std::to_string(comm->rank()));
      exchange->EnableStatsCsv(path);
    } else if (!FLAGS_sync_stats.empty() && comm->rank() == 0) {
      exchange->EnableStatsCsv(FLAGS_sync_stats);
    }
    solver->set_gradient_exchange(exchange);
    LOG(INFO) << "Data-parallel training on " << comm->size() << " rank(s) over "
              << comm->backend() << (device_backend.empty() ? "" : " (device buffers over " + device_backend + ")")
              << ", exchange " << exchange->method_name();
  }
  if (!FLAGS_stop_at_test_score.empty()) {
    const size_t equals = FLAGS_stop_at_test_score.find('=');
    CAFFE_REQUIRE(equals != string::npos && equals > 0)
        << "-stop_at_test_score " << FLAGS_stop_at_test_score << ": expected OUTPUT=VALUE, "
        << "e.g. accuracy=0.905";
    const string value = FLAGS_stop_at_test_score.substr(equals + 1);
    char* end = nullptr;
    const float target = std::strtof(value.c_str(), &end);
    CAFFE_REQUIRE(!value.empty() && *end == '\0' && std::isfinite(target))
        << "-stop_at_test_score " << FLAGS_stop_at_test_score << ": '" << value
        << "' is not a number";
    // Only rank 0 builds the test nets (it alone tests).
    CAFFE_REQUIRE(param.test_interval() > 0 && (comm->rank() != 0 || !solver->test_nets().empty()))
        << "-stop_at_test_score needs test passes: " << FLAGS_solver << " sets no test_interval "
        << "or no test net";
    solver->set_stop_at_test_score(FLAGS_stop_at_test_score.substr(0, equals), target);
  }
  LOG(INFO) << "Starting Optimization";
  solver->Solve(FLAGS_snapshot);
  std::ostringstream summary;
  summary << "Final: iteration " << solver->iter() << ", train loss " << solver->smoothed_loss();
  if (!solver->last_test_scores().empty() && solver->last_test_iter() != solver->iter()) {
    // No test ran at the end (max_iter is not a multiple of test_interval): say
    // which iteration the scores belong to, so that they are not read as final.
    summary << ", last test at iteration " << solver->last_test_iter();
  }
  for (const auto& score : solver->last_test_scores()) {
    summary << ", test " << score.first << " = " << score.second;
  }
  if (solver->gradient_exchange()) {
    // Overall figures include the dense warm-up; the steady-state ones cover the steps
    // after it and after any density ramp, which is what the compression ratios of the
    // method describe.
    const ExchangeStats& s = solver->gradient_exchange()->stats();
    auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
    if (s.total_steps() > 0) {
      summary << ", exchange " << solver->gradient_exchange()->method_name()
              << " overall: nominal ratio " << ratio(s.total_elements(), s.total_sent())
              << "x, wire ratio " << ratio(s.total_dense_bytes(), s.total_bytes())
              << "x, bytes/step " << s.total_bytes() / s.total_steps();
    }
    if (s.sparse_steps() > 0) {
      summary << "; after warm-up: nominal ratio " << ratio(s.sparse_elements(), s.sparse_sent())
              << "x, wire ratio " << ratio(s.sparse_dense_bytes(), s.sparse_bytes())
              << "x, bytes/step " << s.sparse_bytes() / s.sparse_steps();
      int64_t max_age = 0;
      double mean_age = 0;
      solver->gradient_exchange()->CurrentAge(&max_age, &mean_age);
      summary << "; age max " << max_age << " mean " << mean_age;
    }
  }
  summary << "; training time " << solver->training_seconds() << " s (test passes excluded)";
  LOG(INFO) << summary.str();
  LOG(INFO) << "Peak resident memory: " << PeakResidentMegabytes() << " MB";
  return 0;
}

int Test() {
  CAFFE_REQUIRE(!FLAGS_model.empty()) << "test needs -model=FILE";
  CAFFE_REQUIRE(!FLAGS_weights.empty()) << "test needs -weights=FILE";
  auto context = MakeContext();
  ConfigureDevice(context.get(), false, 0);
  Net net(FLAGS_model, ParsePhase(FLAGS_phase, TEST), context, FLAGS_level,
          SplitComma(FLAGS_stage));
  ShareActivationData(&net, "net");
  for (const string& file : SplitComma(FLAGS_weights)) net.CopyTrainedLayersFrom(file);
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";
  vector<double> scores;
  vector<string> names;
  vector<float> weights;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    float iter_loss;
    const vector<Blob*>& result = net.Forward(&iter_loss);
    loss += iter_loss;
    size_t idx = 0;
    for (size_t j = 0; j < result.size(); ++j) {
      const string& name = net.blob_names()[net.output_blob_indices()[j]];
      for (int64_t k = 0; k < result[j]->count(); ++k, ++idx) {
        const float value = result[j]->cpu_data()[k];
        if (scores.size() <= idx) {
          scores.push_back(0);
          names.push_back(name);
          weights.push_back(net.blob_loss_weights()[net.output_blob_indices()[j]]);
        }
        scores[idx] += value;
        LOG(INFO) << "Batch " << i << ", " << name << " = " << value;
      }
    }
  }
  LOG(INFO) << "Loss: " << loss / FLAGS_iterations;
  for (size_t i = 0; i < scores.size(); ++i) {
    const double mean = scores[i] / FLAGS_iterations;
    std::ostringstream loss_msg;
    if (weights[i]) loss_msg << " (* " << weights[i] << " = " << weights[i] * mean << " loss)";
    LOG(INFO) << names[i] << " = " << mean << loss_msg.str();
  }
  return 0;
}

int Time() {
  CAFFE_REQUIRE(!FLAGS_model.empty()) << "time needs -model=FILE";
  CAFFE_REQUIRE(FLAGS_iterations > 0) << "-iterations must be positive";
  auto context = MakeContext();
  ConfigureDevice(context.get(), false, 0);
  Net net(FLAGS_model, ParsePhase(FLAGS_phase, TRAIN), context, FLAGS_level,
          SplitComma(FLAGS_stage));
  ShareActivationDiffs(&net, false);
  using Clock = std::chrono::steady_clock;
  // In GPU mode every reading first waits for the device, so a layer is charged
  // for its kernels rather than for launching them.
  const bool on_gpu = context->mode() == Mode::GPU;
  auto ms_since = [on_gpu](Clock::time_point start) {
    if (on_gpu) SynchronizeDevice();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  LOG(INFO) << "Performing Forward";
  float initial_loss;
  net.Forward(&initial_loss);  // warm-up pass (allocations, first-touch)
  LOG(INFO) << "Initial loss: " << initial_loss;
  LOG(INFO) << "Performing Backward";
  net.Backward();

  const auto& layers = net.layers();
  const size_t n = layers.size();
  vector<double> forward_ms(n, 0), backward_ms(n, 0);
  double forward_total = 0, backward_total = 0;
  if (on_gpu) SynchronizeDevice();
  const auto total_start = Clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    auto pass_start = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      const auto start = Clock::now();
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      forward_ms[i] += ms_since(start);
    }
    forward_total += ms_since(pass_start);
    pass_start = Clock::now();
    for (size_t i = n; i-- > 0;) {
      if (!net.layer_need_backward()[i]) continue;
      const auto start = Clock::now();
      layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i], net.bottom_vecs()[i]);
      backward_ms[i] += ms_since(start);
    }
    backward_total += ms_since(pass_start);
    LOG(INFO) << "Iteration: " << it + 1 << " forward-backward time: "
              << ms_since(total_start) / (it + 1) << " ms.";
  }
  const double iters = FLAGS_iterations;
  LOG(INFO) << "Average time per layer: ";
  for (size_t i = 0; i < n; ++i) {
    char line[256];
    std::snprintf(line, sizeof(line), "%16s\tforward: %.4f ms.", net.layer_names()[i].c_str(),
                  forward_ms[i] / iters);
    LOG(INFO) << line;
    std::snprintf(line, sizeof(line), "%16s\tbackward: %.4f ms.", net.layer_names()[i].c_str(),
                  backward_ms[i] / iters);
    LOG(INFO) << line;
  }
  LOG(INFO) << "Average Forward pass: " << forward_total / iters << " ms.";
  LOG(INFO) << "Average Backward pass: " << backward_total / iters << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << (forward_total + backward_total) / iters << " ms.";
  LOG(INFO) << "Total Time: " << ms_since(total_start) << " ms.";
  LOG(INFO) << "Peak resident memory: " << PeakResidentMegabytes() << " MB";
  return 0;
}

int DeviceQuery() {
#ifdef USE_CUDA
  const int count = CudaDeviceCount();
  if (count == 0) {
    std::cout << "No CUDA device is available (driver missing or no GPU).\n";
    return 0;
  }
  vector<int> devices;
  if (FLAGS_gpu.empty() || FLAGS_gpu == "all") {
    for (int i = 0; i < count; ++i) devices.push_back(i);
  } else {
    // Ids as train reads them (atoi took "abc" for 0 and "1,2" for 1), and a list
    // as BVLC Caffe's device_query takes it.
    for (const string& item : SplitComma(FLAGS_gpu)) {
      char* end = nullptr;
      const long id = std::strtol(item.c_str(), &end, 10);
      CAFFE_REQUIRE(end && *end == '\0' && id >= 0 && id < count)
          << "-gpu " << FLAGS_gpu << ": '" << item << "' is not a GPU id (" << count
          << " GPU(s) available)";
      devices.push_back(static_cast<int>(id));
    }
    CAFFE_REQUIRE(!devices.empty()) << "-gpu " << FLAGS_gpu << ": no GPU id given";
  }
  for (int id : devices) {
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, id));
    std::cout << "Device id:                     " << id << "\n"
              << "Name:                          " << prop.name << "\n"
              << "Compute capability:            " << prop.major << "." << prop.minor << "\n"
              << "Total global memory:           " << prop.totalGlobalMem << "\n"
              << "Total shared memory per block: " << prop.sharedMemPerBlock << "\n"
              << "Total registers per block:     " << prop.regsPerBlock << "\n"
              << "Warp size:                     " << prop.warpSize << "\n"
              << "Maximum threads per block:     " << prop.maxThreadsPerBlock << "\n"
              << "Number of multiprocessors:     " << prop.multiProcessorCount << "\n"
              << "L2 cache size:                 " << prop.l2CacheSize << "\n";
  }
#else
  std::cout << "This build is CPU-only (no CUDA); no device to query.\n";
#endif
  return 0;
}

// Rank and size of this process in an MPI job of several ranks; false when it runs
// alone (no MPI, MPI not started or already finalized, or a job of one).
bool RankInJob(int* rank, int* size) {
#ifdef USE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return false;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return *size > 1;
#else
  (void)rank;
  (void)size;
  return false;
#endif
}

// Prints the one error line and ends with status 1. In a job of several ranks an
// error may hit one rank only (its own state file, its data shard) while the others
// wait for it in a collective, and MPI_Finalize at exit would then wait for them in
// turn: aborting the job makes mpirun end every rank instead of hanging.
int FailWith(const string& message) {
  int rank = 0, size = 1;
  const bool in_job = RankInJob(&rank, &size);
  // One write of the whole line: the other ranks log to the same stream, and a line
  // written piecewise can come out with their lines inside it.
  const string line = "error: " +
                      (in_job ? "rank " + std::to_string(rank) + " of " + std::to_string(size) + ": "
                              : string()) +
                      message + "\n";
  std::cerr.flush();
  if (::write(STDERR_FILENO, line.data(), line.size()) < 0) std::perror("caffe");
#ifdef USE_MPI
  if (in_job) caffe::AbortMpiJob(1);
#endif
  return 1;
}

}  // namespace
}  // namespace caffe

int main(int argc, char** argv) {
  FLAGS_alsologtostderr = 1;
  gflags::SetUsageMessage(
      "command line brew\n"
      "usage: caffe <command> <args>\n\n"
      "commands:\n"
      "  train           train or finetune a model (-solver, -weights, -snapshot)\n"
      "  test            score a model (-model, -weights, -iterations)\n"
      "  time            benchmark model execution time (-model, -iterations)\n"
      "  device_query    show GPU diagnostic information");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // Caffe's line prefix (I1202 11:12:21.020097 ...) without glog 0.6's year, so
  // that BVLC's tools/extra/parse_log.py reads our logs.
  FLAGS_log_year_in_prefix = false;
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();
  if (argc != 2) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/caffe");
    std::cerr << "error: expected one command (train, test, time, device_query)\n";
    return 1;
  }
  const std::string command = argv[1];
  try {
    CAFFE_REQUIRE(FLAGS_threads >= 0) << "-threads must not be negative, found " << FLAGS_threads;
    if (FLAGS_threads > 0) caffe::SetNumThreads(FLAGS_threads);
    if (command == "train") return caffe::Train();
    if (command == "test" || command == "time") {
      caffe::WarnIfBlasHasItsOwnPool(caffe::NumThreads());
    }
    if (command == "test") return caffe::Test();
    if (command == "time") return caffe::Time();
    if (command == "device_query") return caffe::DeviceQuery();
    std::cerr << "error: unknown command '" << command
              << "' (expected train, test, time or device_query)\n";
    return 1;
  } catch (const caffe::Error& e) {
    return caffe::FailWith(e.what());
  } catch (const std::bad_alloc&) {
    return caffe::FailWith("out of memory");
  }
}
