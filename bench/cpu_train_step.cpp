// Real training steps (forward + backward + SGD momentum update through the Solver)
// on a model's "synthetic" stage, for the side-by-side comparison with PyTorch
// (bench/cpu_vs_torch.py drives it).
//
//   cpu_train_step -model M [-threads T] [-stage synthetic] [-serve]
//                  [-warmup W -rounds R -steps K] [-memory_plan=false]
//
// Without -serve it runs W warm-up steps, then R rounds of K steps, and prints the
// median step time. With -serve it reads commands on stdin, one per line, and answers
// each with one line on stdout, so that a driver can interleave it with another
// process and neither runs while the other is timed:
//   warm N          -> "ok"                      N untimed steps
//   run K           -> "times t1 ... tK"         milliseconds per step
//   layers K        -> "layer NAME TYPE fwd_ms bwd_ms fwd_flops bwd_flops" per
//                      Convolution layer, then "end" (K forward/backward passes timed
//                      layer by layer, as `caffe time` does)
//   params          -> "params N"                learnable elements (weights, biases,
//                                                scale/shift; not BatchNorm statistics)
//   quit            -> "maxrss_kb N"             peak resident set of this process
// Solver settings: SGD, base_lr 0.01 fixed, momentum 0.9, weight_decay 5e-4 (what
// the PyTorch side uses too); no test nets, no display, no snapshots.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/util/peak_memory.hpp"

DEFINE_string(model, "", "Net prototxt with a synthetic (DummyData) stage.");
DEFINE_string(stage, "synthetic", "Net stage(s), comma separated.");
DEFINE_int32(threads, 0, "Threads for OpenBLAS, oneDNN and the project's loops (0: all cores).");
DEFINE_bool(serve, false, "Read commands from stdin (see the file comment).");
DEFINE_bool(memory_plan, true,
            "Let activation diffs share memory (Net::ShareActivationDiffs) and fold Scale "
            "into BatchNorm (Net::FoldChannelScales) and keep activations between oneDNN "
            "convolutions blocked (Net::PlanChannelBlockedLayouts), as caffe train does.");
DEFINE_int32(warmup, 2, "Untimed steps (without -serve).");
DEFINE_int32(rounds, 3, "Timed rounds (without -serve).");
DEFINE_int32(steps, 5, "Steps per round (without -serve).");

namespace caffe {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

shared_ptr<Solver> MakeSolver() {
  SolverParameter param;
  param.set_net(FLAGS_model);
  std::stringstream stages(FLAGS_stage);
  for (string stage; std::getline(stages, stage, ',');) {
    if (!stage.empty()) param.mutable_train_state()->add_stage(stage);
  }
  param.set_type("SGD");
  param.set_base_lr(0.01f);
  param.set_lr_policy("fixed");
  param.set_momentum(0.9f);
  param.set_weight_decay(5e-4f);
  param.set_max_iter(1 << 30);
  param.set_display(0);
  param.set_snapshot(0);
  param.set_random_seed(1);
  auto context = std::make_shared<Context>(1);
  context->set_mode(Mode::CPU);
  auto solver = SolverRegistry::CreateSolver(param, context, "cpu_train_step");
  // As `caffe train` does (its -memory_plan flag, on by default).
  if (FLAGS_memory_plan) {
    solver->net()->ShareActivationDiffs();
    solver->net()->FoldChannelScales();
    solver->net()->PlanChannelBlockedLayouts();
  }
  return solver;
}

vector<double> TimedSteps(Solver& solver, int steps) {
  vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = Clock::now();
    solver.Step(1);
    ms.push_back(MsSince(start));
  }
  return ms;
}

// Multiply-adds x 2 of a convolution's forward pass: every output element is a dot
// product over (input channels / group) x kernel positions, i.e. weights.count() /
// output channels. Deconvolution is the transpose: every input element is scattered
// over (output channels / group) x kernel positions.
double ConvForwardFlops(Layer& layer, const Blob& bottom, const Blob& top) {
  const Blob& weights = *layer.blobs()[0];
  const double per_item = static_cast<double>(weights.count()) / weights.shape(0);
  const bool deconv = string(layer.type()) == "Deconvolution";
  return 2.0 * per_item * (deconv ? bottom.count() : top.count());
}

void TimeConvLayers(Net& net, int iterations) {
  const auto& layers = net.layers();
  const size_t n = layers.size();
  vector<double> fwd(n, 0), bwd(n, 0);
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < n; ++i) {
      const auto start = Clock::now();
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      fwd[i] += MsSince(start);
    }
    for (size_t i = n; i-- > 0;) {
      if (!net.layer_need_backward()[i]) continue;
      const auto start = Clock::now();
      layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i], net.bottom_vecs()[i]);
      bwd[i] += MsSince(start);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const string type = layers[i]->type();
    if (type != "Convolution" && type != "Deconvolution") continue;
    const double flops =
        ConvForwardFlops(*layers[i], *net.bottom_vecs()[i][0], *net.top_vecs()[i][0]);
    // Backward: the weight gradient always, the data gradient only when the bottom
    // needs one (not for a first layer on the data).
    const bool data_grad = net.bottom_need_backward()[i][0];
    const double bwd_flops = net.layer_need_backward()[i] ? flops * (data_grad ? 2 : 1) : 0;
    std::printf("layer %s %s %.4f %.4f %.0f %.0f\n", net.layer_names()[i].c_str(), type.c_str(),
                fwd[i] / iterations, bwd[i] / iterations, flops, bwd_flops);
  }
  std::printf("end\n");
}

int64_t LearnableElements(const Net& net) {
  int64_t total = 0;
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    if (net.params_lr()[i] > 0) total += net.learnable_params()[i]->count();
  }
  return total;
}

// Peak resident memory in KB (VmHWM: ru_maxrss would carry over the driver's peak
// across its fork and exec).
long MaxRssKb() { return static_cast<long>(caffe::PeakResidentMegabytes() * 1024.0); }

double Median(vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int Serve(Solver& solver) {
  string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    string command;
    int count = 0;
    in >> command >> count;
    if (command == "warm") {
      solver.Step(std::max(count, 1));
      std::printf("ok\n");
    } else if (command == "run") {
      std::printf("times");
      for (double ms : TimedSteps(solver, std::max(count, 1))) std::printf(" %.4f", ms);
      std::printf("\n");
    } else if (command == "layers") {
      TimeConvLayers(*solver.net(), std::max(count, 1));
    } else if (command == "params") {
      std::printf("params %lld\n", static_cast<long long>(LearnableElements(*solver.net())));
    } else if (command == "quit") {
      std::printf("maxrss_kb %ld\n", MaxRssKb());
      std::fflush(stdout);
      return 0;
    } else {
      std::printf("error unknown command '%s'\n", line.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace caffe

int main(int argc, char** argv) {
  FLAGS_minloglevel = 1;  // the driver's stdout is the protocol; keep INFO logs away
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (FLAGS_model.empty()) {
    std::fprintf(stderr, "usage: cpu_train_step -model M [-threads T] [-serve]\n");
    return 2;
  }
  try {
    if (FLAGS_threads > 0) caffe::SetNumThreads(FLAGS_threads);
    auto solver = caffe::MakeSolver();
    if (FLAGS_serve) return caffe::Serve(*solver);
    solver->Step(FLAGS_warmup);
    std::vector<double> all;
    for (int r = 0; r < FLAGS_rounds; ++r) {
      for (double ms : caffe::TimedSteps(*solver, FLAGS_steps)) all.push_back(ms);
    }
    std::printf("median_ms_per_step %.3f steps %zu threads %d maxrss_kb %ld\n", caffe::Median(all),
                all.size(), caffe::NumThreads(), caffe::MaxRssKb());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
