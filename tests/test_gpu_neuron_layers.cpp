// GPU paths of the elementwise (neuron) layers: each is compared with its CPU path
// (ExpectGpuMatchesCpu) on parameter settings that reach every branch of its kernels,
// gradient-checked with a GPU context, and run in place on the GPU against the CPU
// path out of place. Dropout's device mask differs from the CPU one, so it is tested
// by its properties. Every test skips without a usable CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/syncedmem.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Reference engines are named explicitly where a type has several, so these tests
// keep exercising the reference layers' kernels whatever DEFAULT picks.
const char kReLU[] = "name: 'r' type: 'ReLU' relu_param { engine: CAFFE }";
const char kLeakyReLU[] =
    "name: 'r' type: 'ReLU' relu_param { engine: CAFFE negative_slope: 0.1 }";
const char kSigmoid[] = "name: 's' type: 'Sigmoid' sigmoid_param { engine: CAFFE }";
const char kTanH[] = "name: 't' type: 'TanH' tanh_param { engine: CAFFE }";
const char kPReLUPerChannel[] =
    "name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: 0.1 max: 0.6 } }";
const char kPReLUShared[] =
    "name: 'p' type: 'PReLU' prelu_param { channel_shared: true "
    "filler { type: 'constant' value: 0.3 } }";

GpuComparison FillRange(float lo, float hi, float tolerance = 1e-4f) {
  GpuComparison options;
  options.tolerance = tolerance;
  options.fill_bottom = [lo, hi](int index, Blob* bottom) {
    FillUniform(bottom, lo, hi, 1701 + index);
  };
  return options;
}

// Values on a coarse grid, so exact zeros and exact thresholds occur.
GpuComparison FillGrid(float step, float lo, int levels) {
  GpuComparison options;
  options.fill_bottom = [=](int, Blob* bottom) {
    float* x = bottom->mutable_cpu_data();
    for (int64_t i = 0; i < bottom->count(); ++i) x[i] = lo + step * static_cast<float>(i % levels);
  };
  return options;
}

void Compare(const std::string& proto, const std::vector<int64_t>& shape,
             const GpuComparison& options = GpuComparison()) {
  SCOPED_TRACE(proto);
  ExpectGpuMatchesCpu(ParseLayer(proto), {shape}, options);
}

std::shared_ptr<Layer> MakeLayer(const std::string& proto, bool gpu) {
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(proto));
  if (gpu) layer->set_context(MakeGpuContext());
  return layer;
}

// Finite differences through the GPU path; step and threshold as in the CPU tests.
void CheckGpuGradient(const std::string& proto, const std::vector<int64_t>& shape, float lo,
                      float hi, float kink_range = -1, uint64_t seed = 1701) {
  SCOPED_TRACE(proto);
  Blob bottom(shape), top;
  FillUniform(&bottom, lo, hi);
  std::shared_ptr<Layer> layer = MakeLayer(proto, /*gpu=*/true);
  GradientChecker checker(1e-2f, 1e-3f, seed, 0.f, kink_range);
  checker.CheckGradient(layer.get(), {&bottom}, {&top});
  EXPECT_GT(checker.checked(), bottom.count() / 2);
}

void ExpectNear(const float* expected, const float* actual, int64_t count, float tolerance,
                const std::string& what) {
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.f, std::fabs(expected[i])))
        << what << " element " << i;
  }
}

// Runs the layer on the CPU out of place and on the GPU in place (top == bottom) on
// the same input, top diff and weights; expects the same output, input gradient and
// weight gradients.
void ExpectGpuInPlaceMatchesCpu(const std::string& proto, const std::vector<int64_t>& shape,
                                float lo, float hi) {
  SCOPED_TRACE(proto);
  Blob input(shape), top_diff(shape);
  FillUniform(&input, lo, hi, 11);
  FillGaussian(&top_diff, 1.f, 12);

  Blob bottom(shape), top;
  bottom.CopyFrom(input);
  std::shared_ptr<Layer> cpu = MakeLayer(proto, /*gpu=*/false);
  cpu->SetUp({&bottom}, {&top});
  cpu->Forward({&bottom}, {&top});
  std::copy_n(top_diff.cpu_data(), top.count(), top.mutable_cpu_diff());
  cpu->Backward({&top}, {true}, {&bottom});

  Blob shared(shape);
  shared.CopyFrom(input);
  std::shared_ptr<Layer> gpu = MakeLayer(proto, /*gpu=*/true);
  gpu->SetUp({&shared}, {&shared});
  ASSERT_EQ(cpu->blobs().size(), gpu->blobs().size());
  for (size_t b = 0; b < cpu->blobs().size(); ++b) {
    gpu->blobs()[b]->CopyFrom(*cpu->blobs()[b]);
    std::fill_n(gpu->blobs()[b]->mutable_cpu_diff(), gpu->blobs()[b]->count(), 0.f);
  }
  gpu->Forward({&shared}, {&shared});
  ExpectNear(top.cpu_data(), shared.cpu_data(), shared.count(), 1e-4f, "output");
  std::copy_n(top_diff.cpu_data(), shared.count(), shared.mutable_cpu_diff());
  gpu->Backward({&shared}, {true}, {&shared});
  ExpectNear(bottom.cpu_diff(), shared.cpu_diff(), shared.count(), 1e-4f, "input gradient");
  for (size_t b = 0; b < cpu->blobs().size(); ++b) {
    ExpectNear(cpu->blobs()[b]->cpu_diff(), gpu->blobs()[b]->cpu_diff(),
               cpu->blobs()[b]->count(), 1e-4f, "weight gradient");
  }
}

}  // namespace

// ---------------------------------------------------------------- every layer

// A layer without a GPU override still "matches the CPU" (it falls back to it), so
// this checks that the results were produced on the device: the CPU fallback would
// leave the top data and bottom diff with their newest copy on the host.
TEST(GpuNeuronLayersTest, EveryLayerComputesOnTheDevice) {
  SKIP_WITHOUT_GPU();
  for (const std::string& proto :
       {std::string(kReLU), std::string(kSigmoid), std::string(kTanH),
        std::string("name: 'e' type: 'ELU'"), std::string("name: 'a' type: 'AbsVal'"),
        std::string("name: 'b' type: 'BNLL'"),
        std::string("name: 'p' type: 'Power' power_param { power: 0.5 shift: 2 }"),
        std::string("name: 'e' type: 'Exp'"),
        std::string("name: 'l' type: 'Log' log_param { shift: 2 }"),
        std::string("name: 't' type: 'Threshold'"), std::string(kPReLUPerChannel),
        std::string("name: 'd' type: 'Dropout' phase: TRAIN"),
        std::string("name: 'd' type: 'Dropout' phase: TEST")}) {
    SCOPED_TRACE(proto);
    Blob bottom({2, 3, 4}), top;
    FillUniform(&bottom, -1, 1);
    std::shared_ptr<Layer> layer = MakeLayer(proto, /*gpu=*/true);
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    EXPECT_EQ(top.data()->head(), SyncedMemory::AT_GPU);
    std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
    layer->Backward({&top}, {true}, {&bottom});
    EXPECT_EQ(bottom.diff()->head(), SyncedMemory::AT_GPU);
  }
}

// ---------------------------------------------------------------- ReLU

TEST(GpuReLULayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare(kReLU, {2, 3, 4, 5});
  Compare(kLeakyReLU, {2, 3, 4, 5});
  Compare("name: 'r' type: 'ReLU' relu_param { engine: CAFFE negative_slope: -0.2 }", {7, 3});
  Compare(kLeakyReLU, {2, 5}, FillGrid(0.5f, -1.f, 5));  // exact zeros
}

TEST(GpuReLULayerTest, MatchesCpuBeyondOneGridOfThreads) {
  SKIP_WITHOUT_GPU();
  // More elements than the launcher's capped grid (16384 blocks of 256) has threads,
  // so threads loop.
  Compare(kLeakyReLU, {5, 1 << 20});
}

TEST(GpuReLULayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient(kReLU, {2, 3, 4}, -1, 1, 1.1e-2f);
  CheckGpuGradient("name: 'r' type: 'ReLU' relu_param { engine: CAFFE negative_slope: 0.25 }",
                   {2, 3, 4}, -1, 1, 1.1e-2f);
}

// NaN in, NaN out, as on the CPU (and in cuDNN's activation, which propagates NaN):
// fmaxf / fminf would map it to 0 and hide a diverged layer from the solver's
// non-finite loss check. Infinities and signed zeros keep their CPU results too.
TEST(GpuReLULayerTest, NonFiniteInputsMatchCpu) {
  SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {std::nanf(""), -std::nanf(""), inf, -inf,
                                     0.f,           -0.f,           1.5f, -1.5f};
  const int64_t n = static_cast<int64_t>(values.size());
  for (const char* proto : {kReLU, kLeakyReLU}) {
    SCOPED_TRACE(proto);
    std::vector<float> out[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      Blob bottom({n}), top;
      std::copy(values.begin(), values.end(), bottom.mutable_cpu_data());
      std::shared_ptr<Layer> layer = MakeLayer(proto, gpu == 1);
      layer->SetUp({&bottom}, {&top});
      layer->Forward({&bottom}, {&top});
      out[gpu].assign(top.cpu_data(), top.cpu_data() + n);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(out[0][i])) {
        EXPECT_TRUE(std::isnan(out[1][i]))
            << "input " << values[i] << ": NaN on the CPU, " << out[1][i] << " on the GPU";
      } else {
        EXPECT_EQ(out[1][i], out[0][i]) << "input " << values[i];
      }
    }
  }
}

TEST(GpuReLULayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu(kReLU, {3, 4}, -1, 1);
  ExpectGpuInPlaceMatchesCpu(
      "name: 'r' type: 'ReLU' relu_param { engine: CAFFE negative_slope: 0.3 }", {3, 4}, -1, 1);
}

// ---------------------------------------------------------------- Sigmoid, TanH

TEST(GpuSigmoidLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare(kSigmoid, {2, 3, 4, 5});
  Compare(kSigmoid, {10, 20}, FillRange(-40, 40));  // saturation
}

TEST(GpuSigmoidLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient(kSigmoid, {2, 3, 4}, -3, 3);
}

TEST(GpuSigmoidLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu(kSigmoid, {3, 4}, -3, 3);
}

TEST(GpuTanHLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare(kTanH, {2, 3, 4, 5});
  Compare(kTanH, {10, 20}, FillRange(-20, 20));
}

TEST(GpuTanHLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient(kTanH, {2, 3, 4}, -2, 2);
}

TEST(GpuTanHLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu(kTanH, {3, 4}, -2, 2);
}

// ---------------------------------------------------------------- ELU

TEST(GpuELULayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 'e' type: 'ELU'", {2, 3, 4, 5}, FillRange(-3, 3));
  Compare("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", {4, 9}, FillRange(-3, 3));
  Compare("name: 'e' type: 'ELU' elu_param { alpha: -0.5 }", {4, 9}, FillRange(-3, 3));
  Compare("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", {2, 5}, FillGrid(0.5f, -1.f, 5));
}

TEST(GpuELULayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", {2, 3, 4}, -2, 2, 0.02f);
}

TEST(GpuELULayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  // alpha >= 0 reads the sign from y; alpha < 0 needs the device copy of the input.
  ExpectGpuInPlaceMatchesCpu("name: 'e' type: 'ELU' elu_param { alpha: 0.7 }", {3, 5}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("name: 'e' type: 'ELU' elu_param { alpha: -0.5 }", {3, 5}, -2, 2);
}

// ---------------------------------------------------------------- Clip and Swish

TEST(GpuClipLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // The grid hits both bounds exactly, where the gradient still passes.
  Compare("name: 'c' type: 'Clip' clip_param { min: -1 max: 0.5 }", {2, 3, 4, 5}, FillRange(-2, 2));
  Compare("name: 'c' type: 'Clip' clip_param { min: -1 max: 0.5 }", {3, 8},
          FillGrid(0.5f, -2.f, 8));
}

TEST(GpuClipLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 'c' type: 'Clip' clip_param { min: -1 max: 0.5 }", {3, 5}, -2,
                             2);
}

TEST(GpuSwishLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 's' type: 'Swish'", {2, 3, 4, 5}, FillRange(-4, 4));
  Compare("name: 's' type: 'Swish' swish_param { beta: 1.7 }", {4, 9}, FillRange(-4, 4));
}

TEST(GpuSwishLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 's' type: 'Swish' swish_param { beta: 0.6 }", {2, 3, 4}, -3, 3);
}

TEST(GpuSwishLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 's' type: 'Swish' swish_param { beta: 1.7 }", {3, 5}, -3, 3);
}

// ---------------------------------------------------------------- AbsVal

TEST(GpuAbsValLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 'a' type: 'AbsVal'", {2, 3, 4, 5});
  Compare("name: 'a' type: 'AbsVal'", {3, 7}, FillGrid(0.5f, -1.f, 5));  // gradient 0 at 0
}

TEST(GpuAbsValLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 'a' type: 'AbsVal'", {2, 3, 4}, -1, 1, 0.02f);
}

TEST(GpuAbsValLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 'a' type: 'AbsVal'", {4, 5}, -1, 1);
}

// ---------------------------------------------------------------- BNLL

TEST(GpuBNLLLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 'b' type: 'BNLL'", {2, 3, 4, 5}, FillRange(-3, 3));
  Compare("name: 'b' type: 'BNLL'", {10, 20}, FillRange(-100, 100));  // no overflow
}

TEST(GpuBNLLLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 'b' type: 'BNLL'", {2, 3, 4}, -3, 3);
}

TEST(GpuBNLLLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 'b' type: 'BNLL'", {3, 4}, -3, 3);
}

// ---------------------------------------------------------------- Power

// One setting per branch: general pow, power 2, power 1, and the two constant cases.
const char* const kPowerSettings[] = {
    "name: 'p' type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 0.5 }",
    "name: 'p' type: 'Power' power_param { power: -1.5 scale: 0.8 shift: 1.5 }",
    "name: 'p' type: 'Power' power_param { power: 2 scale: -1.5 shift: 1 }",
    "name: 'p' type: 'Power' power_param { power: 1 scale: 3 shift: -1 }",
    "name: 'p' type: 'Power' power_param { power: 0 scale: 3 shift: -1 }",
    "name: 'p' type: 'Power' power_param { power: 3 scale: 0 shift: 2 }",
    "name: 'p' type: 'Power' power_param { power: 0 scale: 0 shift: 0 }",  // 0^0 = 1
};

TEST(GpuPowerLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // Positive inputs keep shift + scale * x positive for the fractional powers.
  for (const char* proto : kPowerSettings) Compare(proto, {2, 3, 4, 5}, FillRange(0.1f, 1));
}

TEST(GpuPowerLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (const char* proto : kPowerSettings) CheckGpuGradient(proto, {2, 3, 4}, 0.1f, 1);
}

TEST(GpuPowerLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  for (const char* proto : kPowerSettings) ExpectGpuInPlaceMatchesCpu(proto, {2, 7}, 0.1f, 1);
}

// ---------------------------------------------------------------- Exp

TEST(GpuExpLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 'e' type: 'Exp'", {2, 3, 4, 5});
  Compare("name: 'e' type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }", {4, 9},
          FillRange(-5, 5));
  Compare("name: 'e' type: 'Exp' exp_param { scale: -1 shift: 0.3 }", {4, 9}, FillRange(-5, 5));
}

TEST(GpuExpLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 'e' type: 'Exp'", {2, 3, 4}, -1, 1);
  CheckGpuGradient("name: 'e' type: 'Exp' exp_param { base: 3 scale: 0.5 shift: -1 }", {2, 3, 4},
                   -1, 1);
}

TEST(GpuExpLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 'e' type: 'Exp' exp_param { base: 3 scale: 0.5 shift: -1 }",
                             {2, 6}, -1, 1);
}

// ---------------------------------------------------------------- Log

TEST(GpuLogLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare("name: 'l' type: 'Log'", {2, 3, 4, 5}, FillRange(0.1f, 3));
  Compare("name: 'l' type: 'Log' log_param { base: 10 scale: 0.7 shift: 0.2 }", {4, 9},
          FillRange(0.1f, 3));
}

TEST(GpuLogLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient("name: 'l' type: 'Log'", {2, 3, 4}, 0.5f, 2);
  CheckGpuGradient("name: 'l' type: 'Log' log_param { base: 10 scale: 0.7 shift: 0.2 }",
                   {2, 3, 4}, 0.5f, 2);
}

TEST(GpuLogLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 'l' type: 'Log' log_param { base: 2 scale: 0.7 shift: 0.2 }",
                             {3, 4}, 0.5f, 2);
}

// ---------------------------------------------------------------- Threshold

TEST(GpuThresholdLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // The grid hits the threshold exactly, where the output must be 0 (strict >).
  Compare("name: 't' type: 'Threshold'", {3, 7}, FillGrid(0.25f, -0.5f, 5));
  Compare("name: 't' type: 'Threshold' threshold_param { threshold: 0.5 }", {3, 7},
          FillGrid(0.25f, 0.f, 5));
}

TEST(GpuThresholdLayerTest, BackwardWritesZeros) {
  SKIP_WITHOUT_GPU();
  Blob bottom({4, 5}), top;
  FillUniform(&bottom, -1, 1);
  std::shared_ptr<Layer> layer = MakeLayer("name: 't' type: 'Threshold'", /*gpu=*/true);
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
  std::fill_n(bottom.mutable_cpu_diff(), bottom.count(), 5.f);
  layer->Backward({&top}, {true}, {&bottom});
  for (int64_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], 0.f) << i;
}

TEST(GpuThresholdLayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("name: 't' type: 'Threshold' threshold_param { threshold: 0.2 }",
                             {3, 4}, -1, 1);
}

// ---------------------------------------------------------------- PReLU

TEST(GpuPReLULayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* proto : {kPReLUPerChannel, kPReLUShared}) {
    Compare(proto, {2, 3, 4, 5});
    Compare(proto, {6, 5});  // no spatial axes
    // Channels of 8192 elements: the slope gradient is split over several blocks.
    Compare(proto, {8, 3, 32, 32});
    Compare(proto, {2, 3, 2}, FillGrid(0.5f, -1.f, 5));  // exact zeros count as x <= 0
  }
}

TEST(GpuPReLULayerTest, SlopeGradientAccumulates) {
  SKIP_WITHOUT_GPU();
  for (const char* proto : {kPReLUPerChannel, kPReLUShared}) {
    SCOPED_TRACE(proto);
    Blob bottom({4, 3, 5, 5}), top;
    FillUniform(&bottom, -1, 1);
    std::shared_ptr<Layer> layer = MakeLayer(proto, /*gpu=*/true);
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    FillGaussian(&top, 1.f, 3);  // as data; copied into the diff below
    std::copy_n(top.cpu_data(), top.count(), top.mutable_cpu_diff());
    Blob& slopes = *layer->blobs()[0];
    std::fill_n(slopes.mutable_cpu_diff(), slopes.count(), 0.f);
    layer->Backward({&top}, {false}, {&bottom});
    const std::vector<float> once(slopes.cpu_diff(), slopes.cpu_diff() + slopes.count());
    layer->Backward({&top}, {false}, {&bottom});
    for (int64_t c = 0; c < slopes.count(); ++c) {
      EXPECT_NE(once[c], 0.f) << c;
      EXPECT_NEAR(slopes.cpu_diff()[c], 2 * once[c], 1e-5f * std::max(1.f, std::fabs(once[c])))
          << c;
    }
  }
}

TEST(GpuPReLULayerTest, SlopeGradientIsDeterministic) {
  SKIP_WITHOUT_GPU();
  Blob bottom({16, 3, 32, 32}), top;
  FillUniform(&bottom, -1, 1);
  std::shared_ptr<Layer> layer = MakeLayer(kPReLUShared, /*gpu=*/true);
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  FillGaussian(&top, 1.f, 5);  // as data; copied into the diff below
  std::copy_n(top.cpu_data(), top.count(), top.mutable_cpu_diff());
  float first = 0;
  for (int run = 0; run < 3; ++run) {
    layer->blobs()[0]->mutable_cpu_diff()[0] = 0.f;
    layer->Backward({&top}, {false}, {&bottom});
    const float value = layer->blobs()[0]->cpu_diff()[0];
    if (run == 0) first = value;
    EXPECT_EQ(value, first) << "run " << run;
  }
}

TEST(GpuPReLULayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  CheckGpuGradient(kPReLUPerChannel, {2, 3, 2, 2}, -1, 1, 0.02f);
  CheckGpuGradient("name: 'p' type: 'PReLU' prelu_param { channel_shared: true }", {2, 3, 2, 2},
                   -1, 1, 0.02f);
}

TEST(GpuPReLULayerTest, InPlace) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu(kPReLUPerChannel, {2, 3, 4}, -1, 1);
  ExpectGpuInPlaceMatchesCpu(kPReLUShared, {2, 3, 4}, -1, 1);
}

// ---------------------------------------------------------------- Dropout

namespace {

std::string DropoutProto(const std::string& phase, float ratio, bool scale_train = true) {
  return "name: 'd' type: 'Dropout' phase: " + phase + " dropout_param { dropout_ratio: " +
         std::to_string(ratio) + " scale_train: " + (scale_train ? "true" : "false") + " }";
}

}  // namespace

TEST(GpuDropoutLayerTest, TestPhaseMatchesCpu) {
  SKIP_WITHOUT_GPU();
  Compare(DropoutProto("TEST", 0.3f), {3, 4, 5});
  Compare(DropoutProto("TEST", 0.25f, /*scale_train=*/false), {3, 4, 5});
}

TEST(GpuDropoutLayerTest, TestPhaseIsIdentity) {
  SKIP_WITHOUT_GPU();
  Blob bottom({3, 4, 5}), top;
  FillUniform(&bottom, -1, 1);
  std::shared_ptr<Layer> layer = MakeLayer(DropoutProto("TEST", 0.3f), /*gpu=*/true);
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  for (int64_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(top.cpu_data()[i], bottom.cpu_data()[i]);
  std::fill_n(top.mutable_cpu_diff(), top.count(), 2.f);
  layer->Backward({&top}, {true}, {&bottom});
  for (int64_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], 2.f);
}

// Keeps 1 - ratio of the elements (within 5 standard deviations), scales the kept ones
// by exactly 1 / (1 - ratio) (or 1 without scale_train), and Backward applies the
// same mask and scale to the top diff.
TEST(GpuDropoutLayerTest, TrainKeepsFractionScalesExactlyAndBackwardUsesTheMask) {
  SKIP_WITHOUT_GPU();
  for (float ratio : {0.1f, 0.5f, 0.8f}) {
    for (bool scale_train : {true, false}) {
      SCOPED_TRACE("ratio " + std::to_string(ratio) + (scale_train ? " scaled" : " unscaled"));
      Blob bottom({1000, 1001}), top;  // an odd count: the last group of four is partial
      FillUniform(&bottom, 0.5f, 1);   // never zero, so a zero output means dropped
      std::shared_ptr<Layer> layer = MakeLayer(DropoutProto("TRAIN", ratio, scale_train), true);
      layer->SetUp({&bottom}, {&top});
      layer->Forward({&bottom}, {&top});
      const float scale = scale_train ? 1.f / (1.f - ratio) : 1.f;
      const float* x = bottom.cpu_data();
      const float* y = top.cpu_data();
      int64_t kept = 0;
      int64_t kept_by_lane[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < top.count(); ++i) {
        if (y[i] == 0.f) continue;
        ASSERT_EQ(y[i], x[i] * scale) << i;
        ++kept;
        ++kept_by_lane[i % 4];
      }
      const double n = static_cast<double>(top.count());
      const double keep = 1.0 - ratio;
      const double sigma = std::sqrt(keep * (1 - keep) / n);
      EXPECT_NEAR(kept / n, keep, 5 * sigma);
      // Each of the four words of one generator call is used as often as the others.
      for (int lane = 0; lane < 4; ++lane) {
        EXPECT_NEAR(kept_by_lane[lane] / (n / 4), keep, 5 * 2 * sigma) << "lane " << lane;
      }

      Blob dy(top.shape());
      FillUniform(&dy, 0.5f, 1, 99);
      std::copy_n(dy.cpu_data(), top.count(), top.mutable_cpu_diff());
      layer->Backward({&top}, {true}, {&bottom});
      const float* dx = bottom.cpu_diff();
      y = top.cpu_data();
      for (int64_t i = 0; i < top.count(); ++i) {
        ASSERT_EQ(dx[i], y[i] == 0.f ? 0.f : dy.cpu_data()[i] * scale) << i;
      }
    }
  }
}

TEST(GpuDropoutLayerTest, MaskFollowsTheContextSeed) {
  SKIP_WITHOUT_GPU();
  Blob bottom({4, 250}), a, b, c;
  FillUniform(&bottom, 0.5f, 1);
  std::shared_ptr<Layer> layer = MakeLayer(DropoutProto("TRAIN", 0.5f), /*gpu=*/true);
  layer->SetUp({&bottom}, {&a});
  layer->context().Seed(42);
  layer->Forward({&bottom}, {&a});
  layer->Forward({&bottom}, {&c});  // the generator has moved on: another mask
  layer->context().Seed(42);
  layer->Forward({&bottom}, {&b});
  int64_t differing = 0;
  for (int64_t i = 0; i < bottom.count(); ++i) {
    EXPECT_EQ(a.cpu_data()[i], b.cpu_data()[i]) << i;
    differing += (a.cpu_data()[i] == 0.f) != (c.cpu_data()[i] == 0.f);
  }
  EXPECT_GT(differing, bottom.count() / 4);
}

TEST(GpuDropoutLayerTest, InPlaceMatchesOutOfPlace) {
  SKIP_WITHOUT_GPU();
  Blob bottom({3, 30}), in_place({3, 30}), top;
  FillUniform(&bottom, 0.5f, 1);
  in_place.CopyFrom(bottom);
  std::shared_ptr<Layer> a = MakeLayer(DropoutProto("TRAIN", 0.3f), true);
  std::shared_ptr<Layer> b = MakeLayer(DropoutProto("TRAIN", 0.3f), true);
  a->SetUp({&bottom}, {&top});
  b->SetUp({&in_place}, {&in_place});
  a->context().Seed(7);
  b->context().Seed(7);
  a->Forward({&bottom}, {&top});
  b->Forward({&in_place}, {&in_place});
  std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
  std::fill_n(in_place.mutable_cpu_diff(), in_place.count(), 1.f);
  a->Backward({&top}, {true}, {&bottom});
  b->Backward({&in_place}, {true}, {&in_place});
  for (int64_t i = 0; i < top.count(); ++i) {
    EXPECT_EQ(in_place.cpu_data()[i], top.cpu_data()[i]) << i;
    EXPECT_EQ(in_place.cpu_diff()[i], bottom.cpu_diff()[i]) << i;
  }
}

TEST(GpuDropoutLayerTest, GradientWithFixedSeed) {
  SKIP_WITHOUT_GPU();
  for (bool scale_train : {true, false}) {
    CheckGpuGradient(DropoutProto("TRAIN", 0.5f, scale_train), {2, 3, 4}, -1, 1, -1, 1234);
  }
}

}  // namespace caffe
