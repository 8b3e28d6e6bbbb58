// Reference (CAFFE) vs oneDNN (DNNL) engine, layer by layer, on the layer shapes of
// LeNet (MNIST), a ResNet-20-like CIFAR net and AlexNet: forward and backward time at
// 1 and 2 threads, median of N runs, the two engines interleaved so that load from
// elsewhere hits both alike. Prints a markdown table of times and ratios (reference
// time / DNNL time: above 1 means DNNL is faster) and a per-layer-type summary, which
// is what layer_engines.cpp's DEFAULT choice is based on.
//
//   conv_engine_bench [runs=5] [threads=1,2] [filter]   (filter: substring of net/layer)
//
// On a machine shared with other work, run the multi-thread columns with
// OMP_WAIT_POLICY=PASSIVE: oneDNN's OpenMP threads otherwise spin at every barrier
// while a descheduled partner holds them up, and times grow by milliseconds per call.
// Build (until bench/CMakeLists.txt is wired in): link it like the tools, against
// caffe_all (the whole-archive layer library).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/layer.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/layers/relu_layer.hpp"
#include "caffe/util/io.hpp"

#ifdef USE_DNNL
#include "caffe/layers/dnnl_batch_norm_layer.hpp"
#include "caffe/layers/dnnl_conv_layer.hpp"
#include "caffe/layers/dnnl_inner_product_layer.hpp"
#include "caffe/layers/dnnl_lrn_layer.hpp"
#include "caffe/layers/dnnl_pooling_layer.hpp"
#include "caffe/layers/dnnl_relu_layer.hpp"
#endif

using namespace caffe;

namespace {

struct Case {
  std::string net;
  std::string layer;
  std::string param;  // LayerParameter text without name
  std::vector<int64_t> bottom;
  bool data_bottom;  // first layer: no bottom gradient, as in a real net
};

std::vector<Case> Cases() {
  const std::string lenet = "LeNet b64", resnet = "ResNet-20 b64", alexnet = "AlexNet b8";
  auto conv = [](const std::string& f) {
    return "type: 'Convolution' convolution_param { " + f +
           " weight_filler { type: 'gaussian' std: 0.05 } }";
  };
  auto ip = [](const std::string& f) {
    return "type: 'InnerProduct' inner_product_param { " + f +
           " weight_filler { type: 'gaussian' std: 0.05 } }";
  };
  auto pool = [](const std::string& f) { return "type: 'Pooling' pooling_param { " + f + " }"; };
  const std::string relu = "type: 'ReLU'";
  const std::string bn = "type: 'BatchNorm'";
  return {
      {lenet, "conv1", conv("num_output: 20 kernel_size: 5"), {64, 1, 28, 28}, true},
      {lenet, "pool1", pool("pool: MAX kernel_size: 2 stride: 2"), {64, 20, 24, 24}, false},
      {lenet, "conv2", conv("num_output: 50 kernel_size: 5"), {64, 20, 12, 12}, false},
      {lenet, "pool2", pool("pool: MAX kernel_size: 2 stride: 2"), {64, 50, 8, 8}, false},
      {lenet, "ip1", ip("num_output: 500"), {64, 50, 4, 4}, false},
      {lenet, "relu1", relu, {64, 500}, false},
      {lenet, "ip2", ip("num_output: 10"), {64, 500}, false},
      {resnet, "conv1", conv("num_output: 16 kernel_size: 3 pad: 1"), {64, 3, 32, 32}, true},
      {resnet, "bn 16x32x32", bn, {64, 16, 32, 32}, false},
      {resnet, "relu 16x32x32", relu, {64, 16, 32, 32}, false},
      {resnet, "conv 16-16", conv("num_output: 16 kernel_size: 3 pad: 1"), {64, 16, 32, 32},
       false},
      {resnet, "conv 16-32 s2", conv("num_output: 32 kernel_size: 3 pad: 1 stride: 2"),
       {64, 16, 32, 32}, false},
      {resnet, "conv 32-32", conv("num_output: 32 kernel_size: 3 pad: 1"), {64, 32, 16, 16},
       false},
      {resnet, "conv 32-64 s2", conv("num_output: 64 kernel_size: 3 pad: 1 stride: 2"),
       {64, 32, 16, 16}, false},
      {resnet, "conv 64-64", conv("num_output: 64 kernel_size: 3 pad: 1"), {64, 64, 8, 8},
       false},
      {resnet, "bn 64x8x8", bn, {64, 64, 8, 8}, false},
      {resnet, "bn 16x32x32 TEST (global stats)", "phase: TEST " + bn, {64, 16, 32, 32}, false},
      {resnet, "pool global AVE", pool("pool: AVE global_pooling: true"), {64, 64, 8, 8},
       false},
      {resnet, "fc", ip("num_output: 10"), {64, 64, 1, 1}, false},
      {alexnet, "conv1", conv("num_output: 96 kernel_size: 11 stride: 4"), {8, 3, 227, 227},
       true},
      {alexnet, "relu1", relu, {8, 96, 55, 55}, false},
      {alexnet, "norm1", "type: 'LRN' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }",
       {8, 96, 55, 55}, false},
      {alexnet, "pool1", pool("pool: MAX kernel_size: 3 stride: 2"), {8, 96, 55, 55}, false},
      {alexnet, "conv2", conv("num_output: 256 kernel_size: 5 pad: 2 group: 2"),
       {8, 96, 27, 27}, false},
      {alexnet, "conv3", conv("num_output: 384 kernel_size: 3 pad: 1"), {8, 256, 13, 13},
       false},
      {alexnet, "conv4", conv("num_output: 384 kernel_size: 3 pad: 1 group: 2"),
       {8, 384, 13, 13}, false},
      {alexnet, "conv5", conv("num_output: 256 kernel_size: 3 pad: 1 group: 2"),
       {8, 384, 13, 13}, false},
      {alexnet, "pool5", pool("pool: MAX kernel_size: 3 stride: 2"), {8, 256, 13, 13}, false},
      {alexnet, "fc6", ip("num_output: 4096"), {8, 256, 6, 6}, false},
      {alexnet, "fc7", ip("num_output: 4096"), {8, 4096}, false},
  };
}

#ifdef USE_DNNL
// The two engines of one layer type, made directly (not through DEFAULT).
std::pair<std::shared_ptr<Layer>, std::shared_ptr<Layer>> MakePair(const LayerParameter& p) {
  const std::string& type = p.type();
  if (type == "Convolution") {
    return {std::make_shared<ConvolutionLayer>(p), std::make_shared<DnnlConvolutionLayer>(p)};
  }
  if (type == "InnerProduct") {
    return {std::make_shared<InnerProductLayer>(p), std::make_shared<DnnlInnerProductLayer>(p)};
  }
  if (type == "Pooling") {
    return {std::make_shared<PoolingLayer>(p), std::make_shared<DnnlPoolingLayer>(p)};
  }
  if (type == "LRN") return {std::make_shared<LRNLayer>(p), std::make_shared<DnnlLRNLayer>(p)};
  if (type == "ReLU") return {std::make_shared<ReLULayer>(p), std::make_shared<DnnlReLULayer>(p)};
  return {std::make_shared<BatchNormLayer>(p), std::make_shared<DnnlBatchNormLayer>(p)};
}
#endif

// One engine's layer with its own blobs, filled once.
struct Runner {
  std::shared_ptr<Layer> layer;
  Blob bottom, top;
  std::vector<Blob*> bottoms, tops;
  std::vector<bool> propagate;

  Runner(std::shared_ptr<Layer> l, const Case& c) : layer(std::move(l)) {
    bottom.Reshape(c.bottom);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    float* x = bottom.mutable_cpu_data();
    for (int64_t i = 0; i < bottom.count(); ++i) x[i] = dist(rng);
    bottoms = {&bottom};
    tops = {&top};
    propagate = {!c.data_bottom};
    layer->SetUp(bottoms, tops);
    float* dy = top.mutable_cpu_diff();
    for (int64_t i = 0; i < top.count(); ++i) dy[i] = dist(rng);
  }
  double TimeForward() {
    const auto start = std::chrono::steady_clock::now();
    layer->Forward(bottoms, tops);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }
  double TimeBackward() {
    const auto start = std::chrono::steady_clock::now();
    layer->Backward(tops, propagate, bottoms);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int> ParseThreads(const std::string& text) {
  std::vector<int> threads;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) threads.push_back(std::atoi(item.c_str()));
  return threads;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = 2;
#ifndef USE_DNNL
  std::printf("built without oneDNN (USE_DNNL off): nothing to compare\n");
  return 0;
#else
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::vector<int> thread_counts = ParseThreads(argc > 2 ? argv[2] : "1,2");
  const std::string filter = argc > 3 ? argv[3] : "";

  std::printf("Median of %d runs, milliseconds per pass; ratio = CAFFE time / DNNL time "
              "(> 1: DNNL faster).\n\n",
              runs);
  std::printf("| net | layer | bottom | thr | CAFFE fwd | DNNL fwd | fwd ratio | CAFFE bwd "
              "| DNNL bwd | bwd ratio | fwd+bwd ratio |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  // Per layer type and thread count: sum of log ratios, for a geometric mean.
  std::map<std::pair<std::string, int>, std::pair<double, int>> summary;
  for (const Case& c : Cases()) {
    if (!filter.empty() && (c.net + " " + c.layer).find(filter) == std::string::npos) continue;
    LayerParameter param;
    ParseProtoFromText("name: '" + c.layer + "' " + c.param, "<bench>", &param);
    for (int threads : thread_counts) {
      SetNumThreads(threads);
      auto layers = MakePair(param);
      Runner reference(layers.first, c), dnnl(layers.second, c);
      dnnl.layer->blobs() = reference.layer->blobs();  // same weights
      std::vector<double> rf, rb, df, db;
      // One untimed pass each builds primitives and warms caches.
      for (int run = -1; run < runs; ++run) {
        const double a = reference.TimeForward(), b = reference.TimeBackward();
        const double c2 = dnnl.TimeForward(), d = dnnl.TimeBackward();
        if (run < 0) continue;
        rf.push_back(a);
        rb.push_back(b);
        df.push_back(c2);
        db.push_back(d);
      }
      const double ref_fwd = Median(rf), ref_bwd = Median(rb);
      const double dnnl_fwd = Median(df), dnnl_bwd = Median(db);
      const double total = (ref_fwd + ref_bwd) / (dnnl_fwd + dnnl_bwd);
      std::printf("| %s | %s | %s | %d | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %.2f |\n",
                  c.net.c_str(), c.layer.c_str(), ShapeText(c.bottom).c_str(), threads, ref_fwd,
                  dnnl_fwd, ref_fwd / dnnl_fwd, ref_bwd, dnnl_bwd, ref_bwd / dnnl_bwd, total);
      std::fflush(stdout);
      auto& entry = summary[{param.type(), threads}];
      entry.first += std::log(total);
      entry.second += 1;
    }
  }
  std::printf("\n| layer type | threads | layers | geometric mean fwd+bwd ratio |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (const auto& [key, value] : summary) {
    std::printf("| %s | %d | %d | %.2f |\n", key.first.c_str(), key.second, value.second,
                std::exp(value.first / value.second));
  }
  return 0;
#endif
}
