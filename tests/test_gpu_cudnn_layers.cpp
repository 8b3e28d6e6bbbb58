// The CUDNN engine: every cuDNN layer (engine: CUDNN, GPU context) against its
// reference layer (engine: CAFFE) on the CPU, over parameters that exercise each cuDNN
// call and each fallback to the reference path; BatchNorm's running statistics over
// several passes and in place; finite-difference gradients on the GPU; and engine
// selection: DEFAULT picks cuDNN in GPU mode and the old choice in CPU mode, and
// engine: CUDNN without cuDNN is a one-line error. The selection tests only create
// layers and nets, so they also run without a GPU (and in CPU-only builds, where they
// check the reference choice and the error).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <typeinfo>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/layers/relu_layer.hpp"
#include "caffe/layers/scale_layer.hpp"
#include "caffe/layers/sigmoid_layer.hpp"
#include "caffe/layers/softmax_layer.hpp"
#include "caffe/layers/tanh_layer.hpp"
#include "caffe/net.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

#ifdef USE_CUDNN
#include "caffe/layers/cudnn_activation_layer.hpp"
#include "caffe/layers/cudnn_batch_norm_layer.hpp"
#include "caffe/layers/cudnn_convolution_layer.hpp"
#include "caffe/layers/cudnn_lrn_layer.hpp"
#include "caffe/layers/cudnn_pooling_layer.hpp"
#include "caffe/layers/cudnn_softmax_layer.hpp"
#endif

namespace caffe {
namespace {

// "name: 'l' type: '<type>' <extra> <field> { <fields> engine: <engine> }"
LayerParameter MakeLayer(const string& type, const string& field, const string& fields,
                         const string& engine, const string& extra = "") {
  string text = "name: 'l' type: '" + type + "' " + extra + " " + field + " { " + fields;
  if (!engine.empty()) text += " engine: " + engine;
  return ParseLayer(text + " }");
}

// The same layer twice: the reference engine for the CPU, and the CUDNN engine in a
// GPU context (the pair every side-by-side test here compares).
struct EnginePair {
  shared_ptr<Layer> reference, cudnn;
};
EnginePair MakeEnginePair(const string& type, const string& field, const string& fields,
                          const string& extra = "") {
  EnginePair pair;
  pair.reference = LayerRegistry::CreateLayer(MakeLayer(type, field, fields, "CAFFE", extra));
  pair.cudnn =
      LayerRegistry::CreateLayer(MakeLayer(type, field, fields, "CUDNN", extra), Mode::GPU);
  pair.cudnn->set_context(MakeGpuContext());
  return pair;
}

// The cuDNN layer on the GPU against the reference layer on the CPU.
void ExpectCudnnMatchesReference(const string& type, const string& field, const string& fields,
                                 const vector<vector<int64_t>>& shapes,
                                 GpuComparison options = GpuComparison(),
                                 const string& extra = "") {
  SCOPED_TRACE(type + " " + field + " { " + fields + " } " + extra);
  options.cpu_param = MakeLayer(type, field, fields, "CAFFE", extra);
  ExpectGpuMatchesCpu(MakeLayer(type, field, fields, "CUDNN", extra), shapes, options);
}

// |actual - expected| <= tolerance * max(1, |expected|) everywhere.
void ExpectClose(const float* expected, const float* actual, int64_t count, float tolerance,
                 const string& what) {
  int64_t failures = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]) /
                         std::max(1.0, std::fabs(static_cast<double>(expected[i])));
    if (!(error <= tolerance) && ++failures <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: cuDNN " << actual[i] << ", reference "
                    << expected[i] << " (relative error " << error << ")";
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << count << " elements differ";
}

// A finite-difference check of the cuDNN layer with a GPU context.
// What an in-place layer on top of this one leaves between forward and backward: it
// rewrites the top's data (seed `data_seed`) and diff (`diff_seed`), the same on both
// sides. Then both layers run backward and their bottom diffs must agree.
void RewriteTopThenCompareBackward(Layer* reference, Layer* cudnn, Blob* ref_top, Blob* gpu_top,
                                   Blob* ref_bottom, Blob* gpu_bottom, uint64_t data_seed,
                                   uint64_t diff_seed, float tolerance) {
  Blob rewritten(ref_top->shape()), noise(ref_top->shape());
  FillUniform(&rewritten, -2, 2, data_seed);
  FillGaussian(&noise, 1.f, diff_seed);
  for (Blob* top : {ref_top, gpu_top}) {
    std::copy(rewritten.cpu_data(), rewritten.cpu_data() + rewritten.count(),
              top->mutable_cpu_data());
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), top->mutable_cpu_diff());
  }
  reference->Backward({ref_top}, {true}, {ref_bottom});
  cudnn->Backward({gpu_top}, {true}, {gpu_bottom});
  ExpectClose(ref_bottom->cpu_diff(), gpu_bottom->cpu_diff(), ref_bottom->count(), tolerance,
              "bottom diff");
}

void CheckGpuGradient(const LayerParameter& param, const vector<Blob*>& bottoms, float stepsize,
                      float threshold, float kink_range = -1.f) {
  SCOPED_TRACE(param.ShortDebugString());
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param, Mode::GPU);
  layer->set_context(MakeGpuContext());
  vector<Blob> top_storage(bottoms.size());
  vector<Blob*> tops;
  for (Blob& top : top_storage) tops.push_back(&top);
  GradientChecker checker(stepsize, threshold, 1701, 0.f, kink_range);
  checker.CheckGradient(layer.get(), bottoms, tops);
  int64_t bottom_count = 0;
  for (Blob* bottom : bottoms) bottom_count += bottom->count();
  EXPECT_GE(checker.checked(), kink_range > 0 ? bottom_count / 2 : bottom_count);
}

// ---------------------------------------------------------------- GPU against CPU

const char kConvFillers[] =
    " weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.5 }";

TEST(CudnnLayersTest, Convolution) {
  SKIP_WITHOUT_GPU();
  auto conv = [](const string& fields, const vector<vector<int64_t>>& shapes,
                 const string& extra = "", bool on_device = true) {
    GpuComparison options;
    options.expect_device_output = on_device;
    ExpectCudnnMatchesReference("Convolution", "convolution_param", fields + kConvFillers, shapes,
                                options, extra);
  };
  conv("num_output: 4 kernel_size: 3 stride: 2 pad: 1", {{2, 3, 7, 6}});
  conv("num_output: 6 kernel_size: 3 group: 3 dilation: 2 pad: 2", {{2, 6, 8, 8}});
  conv("num_output: 3 kernel_h: 1 kernel_w: 3 stride_h: 2 stride_w: 1 bias_term: false", {{3, 2, 5, 5}});
  conv("num_output: 5 kernel_size: 1", {{2, 4, 3, 3}});
  // Two bottoms share the weights: weight and bias diffs accumulate over both.
  conv("num_output: 2 kernel_size: 2", {{2, 3, 4, 4}, {2, 3, 4, 4}},
       "bottom: 'a' bottom: 'b' top: 'c' top: 'd'");
  // 3-d convolution is not given to cuDNN, and n-d convolution has only the host path
  // (README, "On the GPU"): the layer still runs, on the host, in a GPU net.
  conv("num_output: 2 kernel_size: 2", {{1, 2, 3, 4, 4}}, "", /*on_device=*/false);
}

TEST(CudnnLayersTest, ConvolutionAccumulatesWeightDiffsOverCalls) {
  SKIP_WITHOUT_GPU();
  // Two backward passes without clearing: the weight and bias diffs must double.
  const LayerParameter param = MakeLayer(
      "Convolution", "convolution_param", string("num_output: 3 kernel_size: 3") + kConvFillers,
      "CUDNN");
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param, Mode::GPU);
  layer->set_context(MakeGpuContext());
  Blob bottom({2, 2, 5, 5}), top;
  FillUniform(&bottom, -1, 1);
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  FillGaussian(&top, 1.f, 7);
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), top.mutable_cpu_diff());
  for (auto& blob : layer->blobs()) {
    std::fill(blob->mutable_cpu_diff(), blob->mutable_cpu_diff() + blob->count(), 0.f);
  }
  layer->Backward({&top}, {true}, {&bottom});
  vector<vector<float>> once;
  for (auto& blob : layer->blobs()) {
    once.emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
  }
  layer->Backward({&top}, {true}, {&bottom});
  for (size_t b = 0; b < once.size(); ++b) {
    vector<float> twice(once[b]);
    for (float& v : twice) v *= 2.f;
    ExpectClose(twice.data(), layer->blobs()[b]->cpu_diff(), layer->blobs()[b]->count(), 1e-5f,
                "weight blob " + std::to_string(b) + " diff after two backward passes");
  }
}

TEST(CudnnLayersTest, ConvolutionFollowsReshapes) {
  SKIP_WITHOUT_GPU();
  // Batch 2, then 5 (new descriptors, new algorithms, a larger shared workspace), then
  // 2 again (the cached algorithms): each pass against the reference on the CPU.
  const string fields =
      string("num_output: 6 kernel_size: 3 pad: 1 group: 2") + kConvFillers;
  auto [reference, cudnn] = MakeEnginePair("Convolution", "convolution_param", fields);
  Blob ref_bottom({2, 4, 9, 9}), ref_top, gpu_bottom({2, 4, 9, 9}), gpu_top;
  reference->SetUp({&ref_bottom}, {&ref_top});
  cudnn->SetUp({&gpu_bottom}, {&gpu_top});
  for (size_t b = 0; b < reference->blobs().size(); ++b) {
    const Blob& from = *reference->blobs()[b];
    std::copy(from.cpu_data(), from.cpu_data() + from.count(),
              cudnn->blobs()[b]->mutable_cpu_data());
  }
  int pass = 0;
  for (int64_t batch : {2, 5, 2}) {
    const string at = " (batch " + std::to_string(batch) + ", pass " + std::to_string(pass) + ")";
    ref_bottom.Reshape({batch, 4, 9, 9});
    gpu_bottom.Reshape({batch, 4, 9, 9});
    reference->Reshape({&ref_bottom}, {&ref_top});
    cudnn->Reshape({&gpu_bottom}, {&gpu_top});
    FillUniform(&ref_bottom, -1, 1, 300 + pass);
    std::copy(ref_bottom.cpu_data(), ref_bottom.cpu_data() + ref_bottom.count(),
              gpu_bottom.mutable_cpu_data());
    reference->Forward({&ref_bottom}, {&ref_top});
    cudnn->Forward({&gpu_bottom}, {&gpu_top});
    ASSERT_EQ(ref_top.shape(), gpu_top.shape());
    ExpectClose(ref_top.cpu_data(), gpu_top.cpu_data(), ref_top.count(), 1e-4f, "top" + at);
    Blob noise(ref_top.shape());
    FillGaussian(&noise, 1.f, 400 + pass);
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), ref_top.mutable_cpu_diff());
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), gpu_top.mutable_cpu_diff());
    for (Layer* layer : {reference.get(), cudnn.get()}) {
      for (auto& blob : layer->blobs()) {
        std::fill(blob->mutable_cpu_diff(), blob->mutable_cpu_diff() + blob->count(), 0.f);
      }
    }
    reference->Backward({&ref_top}, {true}, {&ref_bottom});
    cudnn->Backward({&gpu_top}, {true}, {&gpu_bottom});
    ExpectClose(ref_bottom.cpu_diff(), gpu_bottom.cpu_diff(), ref_bottom.count(), 1e-4f,
                "bottom diff" + at);
    for (size_t b = 0; b < reference->blobs().size(); ++b) {
      ExpectClose(reference->blobs()[b]->cpu_diff(), cudnn->blobs()[b]->cpu_diff(),
                  reference->blobs()[b]->count(), 1e-4f,
                  "weight blob " + std::to_string(b) + " diff" + at);
    }
    ++pass;
  }
}

TEST(CudnnLayersTest, Pooling) {
  SKIP_WITHOUT_GPU();
  GpuComparison distinct;
  distinct.fill_bottom = [](int, Blob* blob) { FillDistinct(blob, 3); };
  auto pool = [&](const string& fields, const vector<int64_t>& shape, const string& extra = "") {
    ExpectCudnnMatchesReference("Pooling", "pooling_param", fields, {shape}, distinct, extra);
  };
  // cuDNN: Caffe's CEIL size equals cuDNN's floor size.
  pool("pool: MAX kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 7});
  pool("pool: MAX kernel_size: 2 stride: 2", {2, 2, 6, 6});
  pool("pool: AVE kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 7});  // padding in the divisor
  pool("pool: AVE kernel_h: 3 kernel_w: 2 stride: 1 pad_h: 1 pad_w: 1", {1, 2, 5, 6});
  pool("pool: AVE global_pooling: true", {2, 3, 5, 4});
  pool("pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR", {2, 2, 8, 8});
  // Fallbacks: a CEIL window past the padding, the MAX mask top, STOCHASTIC (TEST).
  pool("pool: AVE kernel_size: 3 stride: 2 pad: 1", {2, 3, 6, 6});
  pool("pool: MAX kernel_size: 3 stride: 2", {2, 2, 6, 6});
  pool("pool: MAX kernel_size: 2 stride: 2", {2, 2, 6, 6}, "top: 'y' top: 'mask'");
  GpuComparison positive;
  positive.fill_bottom = [](int, Blob* blob) { FillUniform(blob, 0.1f, 1.f, 5); };
  positive.check_backward = false;
  positive.expect_device_output = false;  // STOCHASTIC runs on the host in GPU mode
  ExpectCudnnMatchesReference("Pooling", "pooling_param", "pool: STOCHASTIC kernel_size: 2",
                              {{1, 2, 4, 4}}, positive, "phase: TEST");
}

#ifdef USE_CUDNN
TEST(CudnnLayersTest, MaxPoolingBackwardSurvivesInPlaceLayerOnTop) {
  SKIP_WITHOUT_GPU();
  // A later in-place layer (Dropout, ReLU, BatchNorm) rewrites the pooled blob between
  // forward and backward. The reference keeps argmax indices; cuDNN's max backward
  // compares x with y, so it must not read the rewritten top.
  for (const char* fields :
       {"pool: MAX kernel_size: 3 stride: 2 pad: 1", "pool: AVE kernel_size: 3 stride: 2"}) {
    SCOPED_TRACE(fields);
    auto [reference, cudnn] = MakeEnginePair("Pooling", "pooling_param", fields);
    Blob ref_bottom({2, 3, 7, 7}), ref_top, gpu_bottom({2, 3, 7, 7}), gpu_top;
    FillDistinct(&ref_bottom, 67);
    std::copy(ref_bottom.cpu_data(), ref_bottom.cpu_data() + ref_bottom.count(),
              gpu_bottom.mutable_cpu_data());
    reference->SetUp({&ref_bottom}, {&ref_top});
    cudnn->SetUp({&gpu_bottom}, {&gpu_top});
    ASSERT_TRUE(static_cast<CudnnPoolingLayer*>(cudnn.get())->uses_cudnn({&gpu_top}));
    reference->Forward({&ref_bottom}, {&ref_top});
    cudnn->Forward({&gpu_bottom}, {&gpu_top});
    ExpectClose(ref_top.cpu_data(), gpu_top.cpu_data(), ref_top.count(), 1e-5f, "top");
    RewriteTopThenCompareBackward(reference.get(), cudnn.get(), &ref_top, &gpu_top, &ref_bottom,
                                  &gpu_bottom, 71, 73, 1e-5f);
  }
}
#endif  // USE_CUDNN

TEST(CudnnLayersTest, LRN) {
  SKIP_WITHOUT_GPU();
  auto lrn = [](const string& fields, const vector<int64_t>& shape) {
    GpuComparison options;
    options.fill_bottom = [](int, Blob* blob) { FillUniform(blob, -1.5f, 1.5f, 11); };
    ExpectCudnnMatchesReference("LRN", "lrn_param", fields, {shape}, options);
  };
  lrn("local_size: 5 alpha: 0.8 beta: 0.75 k: 2", {2, 7, 3, 4});
  lrn("local_size: 3", {2, 2, 4, 3});  // the window reaches past both channel ends
  lrn("local_size: 15 alpha: 2 beta: 0.5", {1, 16, 2, 2});
  // Fallbacks: WITHIN_CHANNEL, and a window wider than cuDNN's 16.
  lrn("local_size: 3 alpha: 2 norm_region: WITHIN_CHANNEL", {2, 2, 5, 4});
  lrn("local_size: 17", {1, 20, 2, 2});
}

TEST(CudnnLayersTest, Softmax) {
  SKIP_WITHOUT_GPU();
  GpuComparison wide;
  wide.fill_bottom = [](int, Blob* blob) { FillUniform(blob, -5, 5, 13); };
  ExpectCudnnMatchesReference("Softmax", "softmax_param", "", {{2, 5, 3, 4}}, wide);
  ExpectCudnnMatchesReference("Softmax", "softmax_param", "axis: 2", {{2, 3, 6, 2}}, wide);
  ExpectCudnnMatchesReference("Softmax", "softmax_param", "axis: -1", {{4, 10}}, wide);
}

TEST(CudnnLayersTest, Activations) {
  SKIP_WITHOUT_GPU();
  GpuComparison wide;
  wide.fill_bottom = [](int, Blob* blob) { FillUniform(blob, -4, 4, 17); };
  ExpectCudnnMatchesReference("ReLU", "relu_param", "", {{2, 3, 4, 5}}, wide);
  ExpectCudnnMatchesReference("Sigmoid", "sigmoid_param", "", {{2, 3, 4, 5}}, wide);
  ExpectCudnnMatchesReference("TanH", "tanh_param", "", {{2, 3, 4, 5}}, wide);
  ExpectCudnnMatchesReference("ReLU", "relu_param", "", {{7, 3}}, wide);
  // Leaky ReLU falls back to the reference GPU path.
  ExpectCudnnMatchesReference("ReLU", "relu_param", "negative_slope: 0.2", {{2, 3, 4}}, wide);
}

TEST(CudnnLayersTest, ReLUBackwardIgnoresRewrittenTop) {
  SKIP_WITHOUT_GPU();
  // ReLU with its own top, then an in-place layer (BatchNorm, Scale) rewrites that top
  // before backward. The reference ReLU's gradient depends on the bottom only.
  auto [reference, cudnn] = MakeEnginePair("ReLU", "relu_param", "");
  Blob ref_bottom({2, 3, 4, 5}), ref_top, gpu_bottom({2, 3, 4, 5}), gpu_top;
  FillUniform(&ref_bottom, -2, 2, 79);
  std::copy(ref_bottom.cpu_data(), ref_bottom.cpu_data() + ref_bottom.count(),
            gpu_bottom.mutable_cpu_data());
  reference->SetUp({&ref_bottom}, {&ref_top});
  cudnn->SetUp({&gpu_bottom}, {&gpu_top});
  reference->Forward({&ref_bottom}, {&ref_top});
  cudnn->Forward({&gpu_bottom}, {&gpu_top});
  // The rewritten top's signs are unrelated to the bottom's.
  RewriteTopThenCompareBackward(reference.get(), cudnn.get(), &ref_top, &gpu_top, &ref_bottom,
                                &gpu_bottom, 83, 89, 1e-6f);
}

TEST(CudnnLayersTest, BatchNormThroughGpuComparison) {
  SKIP_WITHOUT_GPU();
  GpuComparison shifted;
  shifted.fill_bottom = [](int, Blob* blob) { FillUniform(blob, -1, 3, 19); };
  shifted.tolerance = 5e-4f;
  ExpectCudnnMatchesReference("BatchNorm", "batch_norm_param", "", {{4, 3, 5, 2}}, shifted,
                              "phase: TRAIN");
  ExpectCudnnMatchesReference("BatchNorm", "batch_norm_param", "", {{6, 4}}, shifted,
                              "phase: TRAIN");
  ExpectCudnnMatchesReference("BatchNorm", "batch_norm_param",
                              "eps: 0.001 moving_average_fraction: 0.9", {{3, 2, 4}}, shifted,
                              "phase: TRAIN");
  // A single value per channel falls back (Caffe skips the m / (m - 1) correction).
  ExpectCudnnMatchesReference("BatchNorm", "batch_norm_param", "", {{1, 3}}, shifted,
                              "phase: TRAIN");
}

// Reference BatchNorm on the CPU and the cuDNN one on the GPU, side by side for three
// forward/backward passes: tops, bottom diffs and the three statistics blobs after each.
void CompareBatchNorm(const string& fields, const vector<int64_t>& shape, bool in_place,
                      const vector<vector<float>>& preset_statistics = {}) {
  SCOPED_TRACE(fields + (in_place ? " in place" : ""));
  auto [reference, cudnn] =
      MakeEnginePair("BatchNorm", "batch_norm_param", fields, "phase: TRAIN");
  Blob ref_bottom(shape), ref_top, gpu_bottom(shape), gpu_top;
  Blob* ref_out = in_place ? &ref_bottom : &ref_top;
  Blob* gpu_out = in_place ? &gpu_bottom : &gpu_top;
  reference->SetUp({&ref_bottom}, {ref_out});
  cudnn->SetUp({&gpu_bottom}, {gpu_out});
  for (size_t b = 0; b < preset_statistics.size(); ++b) {
    for (Layer* layer : {reference.get(), cudnn.get()}) {
      std::copy(preset_statistics[b].begin(), preset_statistics[b].end(),
                layer->blobs()[b]->mutable_cpu_data());
    }
  }
  const float tolerance = 5e-4f;
  for (int pass = 0; pass < 3; ++pass) {
    const string at = " (pass " + std::to_string(pass) + ")";
    FillUniform(&ref_bottom, -1, 3, 100 + pass);
    std::copy(ref_bottom.cpu_data(), ref_bottom.cpu_data() + ref_bottom.count(),
              gpu_bottom.mutable_cpu_data());
    reference->Forward({&ref_bottom}, {ref_out});
    cudnn->Forward({&gpu_bottom}, {gpu_out});
    ExpectClose(ref_out->cpu_data(), gpu_out->cpu_data(), ref_out->count(), tolerance,
                "top" + at);
    for (int b = 0; b < 3; ++b) {
      ExpectClose(reference->blobs()[b]->cpu_data(), cudnn->blobs()[b]->cpu_data(),
                  reference->blobs()[b]->count(), tolerance,
                  "statistics blob " + std::to_string(b) + at);
    }
    Blob noise(ref_out->shape());
    FillGaussian(&noise, 1.f, 200 + pass);
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), ref_out->mutable_cpu_diff());
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), gpu_out->mutable_cpu_diff());
    reference->Backward({ref_out}, {true}, {&ref_bottom});
    cudnn->Backward({gpu_out}, {true}, {&gpu_bottom});
    ExpectClose(ref_bottom.cpu_diff(), gpu_bottom.cpu_diff(), ref_bottom.count(), tolerance,
                "bottom diff" + at);
  }
}

// BatchNorm then Scale, both in place, as in every ResNet: on the device the Scale
// keeps no copy of its input but reads x_hat from what the BatchNorm keeps (cuDNN: its
// input copy and the batch statistics; the reference kernel: x_hat itself). The pair
// on the GPU must match the pair on the CPU after the top is rewritten between forward
// and backward, as an in-place ReLU would.
TEST(CudnnLayersTest, ScaleInPlaceAfterBatchNormReadsWhatTheBatchNormKeeps) {
  SKIP_WITHOUT_GPU();
  for (const char* engine : {"CUDNN", "CAFFE"}) {
    SCOPED_TRACE(engine);
    const string scale_text = "name: 's' type: 'Scale' scale_param { bias_term: true }";
    auto cpu_bn = LayerRegistry::CreateLayer(
        MakeLayer("BatchNorm", "batch_norm_param", "", "CAFFE", "phase: TRAIN"));
    auto cpu_scale = LayerRegistry::CreateLayer(ParseLayer(scale_text));
    auto gpu_bn = LayerRegistry::CreateLayer(
        MakeLayer("BatchNorm", "batch_norm_param", "", engine, "phase: TRAIN"), Mode::GPU);
    auto gpu_scale = LayerRegistry::CreateLayer(ParseLayer(scale_text), Mode::GPU);
    auto context = MakeGpuContext();
    gpu_bn->set_context(context);
    gpu_scale->set_context(context);
    const vector<int64_t> shape = {4, 3, 5, 2};
    Blob cpu_x(shape), gpu_x(shape);
    cpu_bn->SetUp({&cpu_x}, {&cpu_x});
    cpu_scale->SetUp({&cpu_x}, {&cpu_x});
    gpu_bn->SetUp({&gpu_x}, {&gpu_x});
    gpu_scale->SetUp({&gpu_x}, {&gpu_x});
    cpu_scale->set_bottom_producer(0, cpu_bn.get());
    gpu_scale->set_bottom_producer(0, gpu_bn.get());
    for (int b = 0; b < 2; ++b) {
      Blob* cpu_param = cpu_scale->blobs()[b].get();
      FillUniform(cpu_param, 0.5f, 2.f, 300 + b);
      Blob diff(cpu_param->shape());
      FillUniform(&diff, -1, 1, 310 + b);  // backward must add to these
      for (Layer* layer : {cpu_scale.get(), gpu_scale.get()}) {
        Blob* param = layer->blobs()[b].get();
        std::copy(cpu_param->cpu_data(), cpu_param->cpu_data() + cpu_param->count(),
                  param->mutable_cpu_data());
        std::copy(diff.cpu_data(), diff.cpu_data() + diff.count(), param->mutable_cpu_diff());
      }
    }
    for (int pass = 0; pass < 2; ++pass) {
      const string at = " (pass " + std::to_string(pass) + ")";
      FillUniform(&cpu_x, -1, 3, 320 + pass);
      std::copy(cpu_x.cpu_data(), cpu_x.cpu_data() + cpu_x.count(), gpu_x.mutable_cpu_data());
      cpu_bn->Forward({&cpu_x}, {&cpu_x});
      cpu_scale->Forward({&cpu_x}, {&cpu_x});
      gpu_bn->Forward({&gpu_x}, {&gpu_x});
      gpu_scale->Forward({&gpu_x}, {&gpu_x});
      ExpectClose(cpu_x.cpu_data(), gpu_x.cpu_data(), cpu_x.count(), 5e-4f, "top" + at);
      EXPECT_TRUE(static_cast<ScaleLayer*>(gpu_scale.get())->borrows_input()) << at;
      // The in-place layer after them rewrites the values; the diffs arrive.
      Blob rewritten(shape), dy(shape);
      FillUniform(&rewritten, -5, 5, 330 + pass);
      FillGaussian(&dy, 1.f, 340 + pass);
      for (Blob* x : {&cpu_x, &gpu_x}) {
        std::copy(rewritten.cpu_data(), rewritten.cpu_data() + rewritten.count(),
                  x->mutable_cpu_data());
        std::copy(dy.cpu_data(), dy.cpu_data() + dy.count(), x->mutable_cpu_diff());
      }
      cpu_scale->Backward({&cpu_x}, {true}, {&cpu_x});
      cpu_bn->Backward({&cpu_x}, {true}, {&cpu_x});
      gpu_scale->Backward({&gpu_x}, {true}, {&gpu_x});
      gpu_bn->Backward({&gpu_x}, {true}, {&gpu_x});
      ExpectClose(cpu_x.cpu_diff(), gpu_x.cpu_diff(), cpu_x.count(), 5e-4f, "bottom diff" + at);
      for (int b = 0; b < 2; ++b) {
        ExpectClose(cpu_scale->blobs()[b]->cpu_diff(), gpu_scale->blobs()[b]->cpu_diff(),
                    cpu_scale->blobs()[b]->count(), 5e-4f,
                    (b == 0 ? "scale diff" : "bias diff") + at);
      }
    }
  }
}

TEST(CudnnLayersTest, BatchNormRunningStatistics) {
  SKIP_WITHOUT_GPU();
  CompareBatchNorm("", {4, 3, 5, 2}, /*in_place=*/false);
  CompareBatchNorm("moving_average_fraction: 0.5", {4, 3, 5, 2}, /*in_place=*/true);
  CompareBatchNorm("", {8, 5}, /*in_place=*/false);
}

TEST(CudnnLayersTest, BatchNormGlobalStatistics) {
  SKIP_WITHOUT_GPU();
  const vector<vector<float>> statistics{{0.4f, -0.8f, 2.f}, {2.f, 1.f, 4.f}, {2.f}};
  CompareBatchNorm("use_global_stats: true", {2, 3, 2, 2}, /*in_place=*/false, statistics);
  CompareBatchNorm("use_global_stats: true", {2, 3, 2, 2}, /*in_place=*/true, statistics);
  // A normalizer of 0 (nothing gathered yet) means zero statistics.
  CompareBatchNorm("use_global_stats: true eps: 0.01", {2, 3, 4}, /*in_place=*/false);
}

// In-place runs of the layers that allow it match out-of-place ones on the GPU.
TEST(CudnnLayersTest, InPlaceMatchesOutOfPlace) {
  SKIP_WITHOUT_GPU();
  const vector<std::pair<string, string>> types{{"ReLU", "relu_param"},
                                                 {"Sigmoid", "sigmoid_param"},
                                                 {"TanH", "tanh_param"},
                                                 {"Softmax", "softmax_param"}};
  for (const auto& [type, field] : types) {
    SCOPED_TRACE(type);
    const LayerParameter param = MakeLayer(type, field, "", "CUDNN");
    shared_ptr<Layer> apart = LayerRegistry::CreateLayer(param, Mode::GPU);
    shared_ptr<Layer> in_place = LayerRegistry::CreateLayer(param, Mode::GPU);
    apart->set_context(MakeGpuContext());
    in_place->set_context(MakeGpuContext());
    Blob bottom({2, 4, 3, 3}), top, shared({2, 4, 3, 3});
    FillUniform(&bottom, -3, 3, 23);
    std::copy(bottom.cpu_data(), bottom.cpu_data() + bottom.count(), shared.mutable_cpu_data());
    apart->SetUp({&bottom}, {&top});
    in_place->SetUp({&shared}, {&shared});
    apart->Forward({&bottom}, {&top});
    in_place->Forward({&shared}, {&shared});
    ExpectClose(top.cpu_data(), shared.cpu_data(), top.count(), 1e-6f, "top");
    FillGaussian(&bottom, 1.f, 29);  // reuse as noise for the top diffs
    std::copy(bottom.cpu_data(), bottom.cpu_data() + bottom.count(), top.mutable_cpu_diff());
    std::copy(bottom.cpu_data(), bottom.cpu_data() + bottom.count(), shared.mutable_cpu_diff());
    FillUniform(&bottom, -3, 3, 23);  // the input again, which backward may read
    apart->Backward({&top}, {true}, {&bottom});
    in_place->Backward({&shared}, {true}, {&shared});
    ExpectClose(bottom.cpu_diff(), shared.cpu_diff(), bottom.count(), 1e-6f, "bottom diff");
  }
}

// ---------------------------------------------------------------- gradients on the GPU

TEST(CudnnLayersTest, GradientConvolution) {
  SKIP_WITHOUT_GPU();
  Blob bottom({2, 4, 5, 5});
  FillUniform(&bottom, -1, 1, 31);
  CheckGpuGradient(MakeLayer("Convolution", "convolution_param",
                             string("num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 "
                                    "dilation: 1") +
                                 kConvFillers,
                             "CUDNN"),
                   {&bottom}, 1e-2f, 5e-3f);
  Blob dilated({1, 2, 7, 7});
  FillUniform(&dilated, -1, 1, 37);
  CheckGpuGradient(MakeLayer("Convolution", "convolution_param",
                             string("num_output: 2 kernel_size: 3 dilation: 2") + kConvFillers,
                             "CUDNN"),
                   {&dilated}, 1e-2f, 5e-3f);
}

TEST(CudnnLayersTest, GradientPooling) {
  SKIP_WITHOUT_GPU();
  Blob bottom({2, 2, 7, 7});
  FillDistinct(&bottom, 41);
  for (const char* method : {"MAX", "AVE"}) {
    CheckGpuGradient(MakeLayer("Pooling", "pooling_param",
                               string("pool: ") + method + " kernel_size: 3 stride: 2 pad: 1",
                               "CUDNN"),
                     {&bottom}, 1e-2f, 1e-3f);
  }
}

TEST(CudnnLayersTest, GradientLRN) {
  SKIP_WITHOUT_GPU();
  Blob bottom({2, 6, 3, 2});
  FillUniform(&bottom, -1.5, 1.5, 43);
  CheckGpuGradient(
      MakeLayer("LRN", "lrn_param", "local_size: 3 alpha: 0.8 beta: 0.75 k: 1", "CUDNN"),
      {&bottom}, 1e-2f, 2e-3f);
}

TEST(CudnnLayersTest, GradientSoftmaxAndActivations) {
  SKIP_WITHOUT_GPU();
  Blob bottom({2, 3, 4});
  FillUniform(&bottom, -1, 1, 47);
  CheckGpuGradient(MakeLayer("Softmax", "softmax_param", "", "CUDNN"), {&bottom}, 1e-2f, 1e-3f);
  CheckGpuGradient(MakeLayer("Sigmoid", "sigmoid_param", "", "CUDNN"), {&bottom}, 1e-2f, 1e-3f);
  CheckGpuGradient(MakeLayer("TanH", "tanh_param", "", "CUDNN"), {&bottom}, 1e-2f, 1e-3f);
  // Points within a step of 0 straddle ReLU's kink.
  CheckGpuGradient(MakeLayer("ReLU", "relu_param", "", "CUDNN"), {&bottom}, 1e-2f, 1e-3f,
                   1.1e-2f);
}

TEST(CudnnLayersTest, GradientBatchNorm) {
  SKIP_WITHOUT_GPU();
  Blob bottom({3, 2, 2, 3});
  FillUniform(&bottom, -1, 1, 53);
  CheckGpuGradient(MakeLayer("BatchNorm", "batch_norm_param", "", "CUDNN", "phase: TRAIN"),
                   {&bottom}, 1e-3f, 5e-3f);
  Blob flat({5, 4});
  FillUniform(&flat, -1, 1, 59);
  CheckGpuGradient(MakeLayer("BatchNorm", "batch_norm_param", "", "CUDNN", "phase: TRAIN"),
                   {&flat}, 1e-3f, 5e-3f);
  // Global statistics (zeros here: the normalizer is 0), so dx = dy / sqrt(eps).
  Blob global({2, 3, 2, 2});
  FillUniform(&global, -1, 1, 61);
  CheckGpuGradient(
      MakeLayer("BatchNorm", "batch_norm_param", "use_global_stats: true eps: 1", "CUDNN",
                "phase: TRAIN"),
      {&global}, 1e-2f, 1e-3f);
}

// ---------------------------------------------------------------- engine selection

// One layer of every type with a cuDNN class, by DEFAULT engine.
struct TypeCase {
  string type, field, fields;
};
const vector<TypeCase>& CudnnTypes() {
  static const vector<TypeCase> cases{
      {"Convolution", "convolution_param", "num_output: 2 kernel_size: 3"},
      {"Pooling", "pooling_param", "pool: MAX kernel_size: 2"},
      {"LRN", "lrn_param", "local_size: 3"},
      {"ReLU", "relu_param", ""},
      {"Sigmoid", "sigmoid_param", ""},
      {"TanH", "tanh_param", ""},
      {"Softmax", "softmax_param", ""},
      {"BatchNorm", "batch_norm_param", ""}};
  return cases;
}

#ifdef USE_CUDNN
// Whether `layer` is the cuDNN class of its type.
bool IsCudnnClass(const Layer& layer) {
  return dynamic_cast<const CudnnConvolutionLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnPoolingLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnLRNLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnReLULayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnSigmoidLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnTanHLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnSoftmaxLayer*>(&layer) != nullptr ||
         dynamic_cast<const CudnnBatchNormLayer*>(&layer) != nullptr;
}
#else
bool IsCudnnClass(const Layer&) { return false; }
#endif

TEST(CudnnEngineSelectionTest, DefaultInGpuModePicksCudnn) {
  for (const TypeCase& c : CudnnTypes()) {
    SCOPED_TRACE(c.type);
    const LayerParameter param = MakeLayer(c.type, c.field, c.fields, "");
    shared_ptr<Layer> gpu = LayerRegistry::CreateLayer(param, Mode::GPU);
#ifdef USE_CUDNN
    EXPECT_TRUE(IsCudnnClass(*gpu)) << typeid(*gpu).name();
#else
    // Without cuDNN a GPU net gets the reference class (which has the device kernels),
    // never a oneDNN one.
    const shared_ptr<Layer> reference =
        LayerRegistry::CreateLayer(MakeLayer(c.type, c.field, c.fields, "CAFFE"));
    EXPECT_TRUE(typeid(*gpu) == typeid(*reference)) << typeid(*gpu).name();
#endif
  }
}

TEST(CudnnEngineSelectionTest, DefaultInCpuModeIsUnchanged) {
  for (const TypeCase& c : CudnnTypes()) {
    SCOPED_TRACE(c.type);
    const LayerParameter param = MakeLayer(c.type, c.field, c.fields, "");
    shared_ptr<Layer> plain = LayerRegistry::CreateLayer(param);
    shared_ptr<Layer> cpu = LayerRegistry::CreateLayer(param, Mode::CPU);
    EXPECT_FALSE(IsCudnnClass(*cpu)) << typeid(*cpu).name();
    EXPECT_TRUE(typeid(*plain) == typeid(*cpu)) << typeid(*plain).name();
  }
  // The types that had no engine choice before are still their reference classes.
  for (const char* type : {"Sigmoid", "TanH", "Softmax"}) {
    shared_ptr<Layer> layer =
        LayerRegistry::CreateLayer(ParseLayer(string("name: 'l' type: '") + type + "'"));
    EXPECT_STREQ(layer->type(), type);
    EXPECT_TRUE(dynamic_cast<SigmoidLayer*>(layer.get()) != nullptr ||
                dynamic_cast<TanHLayer*>(layer.get()) != nullptr ||
                dynamic_cast<SoftmaxLayer*>(layer.get()) != nullptr);
    EXPECT_FALSE(IsCudnnClass(*layer));
  }
}

TEST(CudnnEngineSelectionTest, ContextDefaultCaffeKeepsTheReferenceOnTheGpu) {
  Context context;
  context.set_mode(Mode::GPU);
  context.set_default_engine(DefaultEngine::CAFFE);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(
      MakeLayer("Convolution", "convolution_param", "num_output: 2 kernel_size: 3", ""), context);
  EXPECT_TRUE(typeid(*layer) == typeid(ConvolutionLayer)) << typeid(*layer).name();
}

#ifdef USE_CUDNN

TEST(CudnnEngineSelectionTest, EngineCudnnPicksTheCudnnClassInEitherMode) {
  for (const TypeCase& c : CudnnTypes()) {
    SCOPED_TRACE(c.type);
    const LayerParameter param = MakeLayer(c.type, c.field, c.fields, "CUDNN");
    EXPECT_TRUE(IsCudnnClass(*LayerRegistry::CreateLayer(param, Mode::GPU)));
    // In a CPU net the cuDNN class runs its inherited reference CPU code.
    EXPECT_TRUE(IsCudnnClass(*LayerRegistry::CreateLayer(param, Mode::CPU)));
    EXPECT_FALSE(IsCudnnClass(
        *LayerRegistry::CreateLayer(MakeLayer(c.type, c.field, c.fields, "CAFFE"), Mode::GPU)));
  }
  // Deconvolution has no cuDNN class: CUDNN gives the reference layer.
  shared_ptr<Layer> deconv = LayerRegistry::CreateLayer(
      MakeLayer("Deconvolution", "convolution_param", "num_output: 2 kernel_size: 3", "CUDNN"),
      Mode::GPU);
  EXPECT_TRUE(typeid(*deconv) == typeid(DeconvolutionLayer)) << typeid(*deconv).name();
}

// Setting up a cuDNN layer calls no cuDNN (descriptors are made on the first GPU pass),
// so the fallback decisions of the geometries the GPU tests compare are checked here
// too, without a device.
TEST(CudnnEngineSelectionTest, FallbacksFollowTheGeometry) {
  auto pooling_uses_cudnn = [](const string& fields, const vector<int64_t>& shape,
                               int tops = 1) {
    CudnnPoolingLayer layer(MakeLayer("Pooling", "pooling_param", fields, "CUDNN"));
    Blob bottom(shape);
    vector<Blob> top_storage(tops);
    vector<Blob*> top_ptrs;
    for (Blob& t : top_storage) top_ptrs.push_back(&t);
    layer.SetUp({&bottom}, top_ptrs);
    return layer.uses_cudnn(top_ptrs);
  };
  EXPECT_TRUE(pooling_uses_cudnn("pool: MAX kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 7}));
  EXPECT_TRUE(pooling_uses_cudnn("pool: AVE kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 7}));
  EXPECT_TRUE(pooling_uses_cudnn("pool: AVE global_pooling: true", {2, 3, 5, 4}));
  EXPECT_TRUE(pooling_uses_cudnn("pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR",
                                 {2, 2, 8, 8}));
  EXPECT_FALSE(pooling_uses_cudnn("pool: AVE kernel_size: 3 stride: 2 pad: 1", {2, 3, 6, 6}));
  EXPECT_FALSE(pooling_uses_cudnn("pool: MAX kernel_size: 3 stride: 2", {2, 2, 6, 6}));
  EXPECT_FALSE(pooling_uses_cudnn("pool: MAX kernel_size: 2 stride: 2", {2, 2, 6, 6}, 2));
  EXPECT_FALSE(pooling_uses_cudnn("pool: STOCHASTIC kernel_size: 2", {1, 2, 4, 4}));

  auto lrn_uses_cudnn = [](const string& fields) {
    CudnnLRNLayer layer(MakeLayer("LRN", "lrn_param", fields, "CUDNN"));
    Blob bottom({1, 20, 2, 2}), top;
    layer.SetUp({&bottom}, {&top});
    return layer.uses_cudnn();
  };
  EXPECT_TRUE(lrn_uses_cudnn("local_size: 5 alpha: 0.8 beta: 0.75 k: 2"));
  EXPECT_TRUE(lrn_uses_cudnn("local_size: 15"));
  EXPECT_FALSE(lrn_uses_cudnn("local_size: 17"));
  EXPECT_FALSE(lrn_uses_cudnn("local_size: 3 norm_region: WITHIN_CHANNEL"));

  auto relu_uses_cudnn = [](const string& fields) {
    CudnnReLULayer layer(MakeLayer("ReLU", "relu_param", fields, "CUDNN"));
    Blob bottom({2, 3}), top;
    layer.SetUp({&bottom}, {&top});
    return layer.uses_cudnn(bottom);
  };
  EXPECT_TRUE(relu_uses_cudnn(""));
  EXPECT_FALSE(relu_uses_cudnn("negative_slope: 0.2"));

  auto batch_norm_uses_cudnn = [](const string& fields, const vector<int64_t>& shape) {
    CudnnBatchNormLayer layer(
        MakeLayer("BatchNorm", "batch_norm_param", fields, "CUDNN", "phase: TRAIN"));
    Blob bottom(shape), top;
    layer.SetUp({&bottom}, {&top});
    return layer.uses_cudnn();
  };
  EXPECT_TRUE(batch_norm_uses_cudnn("", {4, 3, 5, 2}));
  EXPECT_TRUE(batch_norm_uses_cudnn("", {6, 4}));
  EXPECT_FALSE(batch_norm_uses_cudnn("", {1, 3}));
  EXPECT_TRUE(batch_norm_uses_cudnn("use_global_stats: true", {1, 3}));
}

#else  // !USE_CUDNN

TEST(CudnnEngineSelectionTest, EngineCudnnWithoutCudnnIsAnError) {
  for (Mode mode : {Mode::CPU, Mode::GPU}) {
    try {
      LayerRegistry::CreateLayer(
          ParseLayer("name: 'conv1' type: 'Convolution' convolution_param { num_output: 2 "
                     "kernel_size: 3 engine: CUDNN }"),
          mode);
      ADD_FAILURE() << "expected caffe::Error";
    } catch (const Error& e) {
      const string message = e.what();
      EXPECT_NE(message.find("conv1"), string::npos) << message;
      EXPECT_NE(message.find("CUDNN"), string::npos) << message;
      EXPECT_EQ(message.find('\n'), string::npos) << message;
    }
  }
  // Every type with the engine field says the same.
  try {
    LayerRegistry::CreateLayer(ParseLayer("name: 'prob' type: 'Softmax' softmax_param { "
                                          "engine: CUDNN }"));
    ADD_FAILURE() << "expected caffe::Error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("prob"), string::npos) << e.what();
  }
}

#endif  // USE_CUDNN

// Net creates its layers for its context's mode.
TEST(CudnnEngineSelectionTest, NetPassesItsMode) {
  const NetParameter param = ParseNet(R"(
    name: 'small'
    layer { name: 'data' type: 'Input' top: 'x'
            input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
            convolution_param { num_output: 4 kernel_size: 3 } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c' }
    layer { name: 'relu' type: 'ReLU' bottom: 'c' top: 'c' }
    layer { name: 'pool' type: 'Pooling' bottom: 'c' top: 'p'
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'prob' type: 'Softmax' bottom: 'p' top: 'prob' }
  )");
  auto cpu_context = std::make_shared<Context>();
  Net cpu_net(param, cpu_context);
  // Creating a GPU net touches no device: weights are filled on the host and data moves
  // on first use, so this runs on machines without one too.
  Net gpu_net(param, MakeGpuContext());
  ASSERT_EQ(cpu_net.layers().size(), gpu_net.layers().size());
  for (size_t i = 1; i < cpu_net.layers().size(); ++i) {
    const Layer& cpu_layer = *cpu_net.layers()[i];
    const Layer& gpu_layer = *gpu_net.layers()[i];
    SCOPED_TRACE(cpu_layer.name());
    EXPECT_FALSE(IsCudnnClass(cpu_layer)) << typeid(cpu_layer).name();
    // The CPU net's choice is the registry's CPU default, as before.
    const shared_ptr<Layer> registry_choice = LayerRegistry::CreateLayer(cpu_layer.layer_param());
    EXPECT_TRUE(typeid(cpu_layer) == typeid(*registry_choice)) << typeid(cpu_layer).name();
#ifdef USE_CUDNN
    EXPECT_TRUE(IsCudnnClass(gpu_layer)) << typeid(gpu_layer).name();
#else
    EXPECT_FALSE(IsCudnnClass(gpu_layer));
#endif
  }
}

}  // namespace
}  // namespace caffe
