// GPU paths of the structural and arithmetic layers (Eltwise, Scale, Bias, Concat,
// Slice, Split, Tile, Crop, Flatten, Reshape, Silence, Embed, MVN, Reduction): each
// checked against its CPU path on shapes and settings that reach every branch of the
// kernels, and by a finite-difference gradient check run in GPU mode. Every test
// skips (with the reason) where no GPU can run this build's kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Finite-difference check of `param`'s layer in GPU mode. `bottoms` are filled by the
// caller; the step and threshold are the ones the layer's CPU test uses.
void CheckGpuGradient(const LayerParameter& param, const vector<Blob*>& bottoms,
                      float stepsize, float threshold, int check_bottom = -1,
                      float kink = 0.f, float kink_range = -1.f) {
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  layer->set_context(MakeGpuContext());
  const int num_tops = std::max(param.top_size(), 1);
  vector<std::unique_ptr<Blob>> tops;
  vector<Blob*> top_ptrs;
  for (int i = 0; i < num_tops; ++i) {
    tops.push_back(std::make_unique<Blob>());
    top_ptrs.push_back(tops.back().get());
  }
  GradientChecker checker(stepsize, threshold, 1701, kink, kink_range);
  checker.CheckGradient(layer.get(), bottoms, top_ptrs, check_bottom);
  EXPECT_GT(checker.checked(), 0);
}

// Whole-number values in [0, limit): indices and labels.
void FillIndices(Blob* blob, int limit, uint64_t seed) {
  FillUniform(blob, 0, limit - 0.001f, seed);
  float* x = blob->mutable_cpu_data();
  for (int64_t i = 0; i < blob->count(); ++i) x[i] = static_cast<float>(static_cast<int>(x[i]));
}

const vector<int64_t> k2x3x4x5{2, 3, 4, 5};

}  // namespace

// ---- Eltwise ----

TEST(GpuEltwiseLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  const char* ops[] = {
      "operation: SUM coeff: 1 coeff: -0.5 coeff: 2",
      "operation: SUM",
      "operation: PROD",
      "operation: PROD stable_prod_grad: false",
      "operation: MAX",
  };
  for (const char* op : ops) {
    SCOPED_TRACE(op);
    ExpectGpuMatchesCpu(
        ParseLayer(std::string("name: 'e' type: 'Eltwise' eltwise_param { ") + op + " }"),
        {k2x3x4x5, k2x3x4x5, k2x3x4x5});
  }
  // Two bottoms (MAX's first-pair kernel alone), and more elements than one grid
  // covers (the grid-stride loops wrap).
  ExpectGpuMatchesCpu(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }"),
                      {k2x3x4x5, k2x3x4x5});
  ExpectGpuMatchesCpu(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: SUM }"),
                      {{3, 1024, 1024}, {3, 1024, 1024}});
}

TEST(GpuEltwiseLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"operation: SUM coeff: 1 coeff: -0.5 coeff: 2", "operation: PROD",
                         "operation: PROD stable_prod_grad: false"}) {
    SCOPED_TRACE(op);
    Blob a({2, 3, 4}), b({2, 3, 4}), c({2, 3, 4});
    FillUniform(&a, -1, 1, 1);
    FillUniform(&b, -1, 1, 2);
    FillUniform(&c, -1, 1, 3);
    CheckGpuGradient(
        ParseLayer(std::string("name: 'e' type: 'Eltwise' eltwise_param { ") + op + " }"),
        {&a, &b, &c}, 1e-2f, 1e-3f);
  }
  // MAX: candidates kept further apart than the step, as in the CPU test.
  Blob a({2, 3, 4}), b({2, 3, 4}), c({2, 3, 4});
  FillUniform(&a, -1, 1, 1);
  for (int i = 0; i < 24; ++i) {
    const float x = a.cpu_data()[i];
    b.mutable_cpu_data()[i] = x + (i % 3 == 0 ? 0.3f : -0.2f);
    c.mutable_cpu_data()[i] = x + (i % 3 == 1 ? 0.5f : -0.1f);
  }
  CheckGpuGradient(ParseLayer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }"),
                   {&a, &b, &c}, 1e-3f, 1e-2f);
}

// ---- Scale and Bias ----

const char kScaleFillers[] =
    "filler { type: 'uniform' min: -1 max: 1 } bias_filler { type: 'uniform' min: -1 max: 1 }";

TEST(GpuScaleLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // Learned scale: default axis 1 over one axis, several axes, all remaining axes, a
  // scalar; each with and without a bias.
  for (const char* axes : {"", "axis: 1 num_axes: 2", "axis: 0 num_axes: -1", "num_axes: 0",
                           "axis: -1"}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(axes) + (bias ? " with bias" : ""));
      ExpectGpuMatchesCpu(ParseLayer(std::string("name: 's' type: 'Scale' scale_param { ") +
                                     axes + (bias ? " bias_term: true " : " ") +
                                     kScaleFillers + " }"),
                          {k2x3x4x5});
    }
  }
  // Scale from a second bottom (its diff is overwritten, not accumulated).
  ExpectGpuMatchesCpu(ParseLayer("name: 's' type: 'Scale' scale_param { axis: 0 }"),
                      {k2x3x4x5, {2, 3}});
  ExpectGpuMatchesCpu(
      ParseLayer(std::string("name: 's' type: 'Scale' scale_param { axis: 1 bias_term: true ") +
                 kScaleFillers + " }"),
      {k2x3x4x5, {3, 4}});
}

TEST(GpuScaleLayerTest, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  // In place the scale gradient reads the saved input; the comparison helper keeps
  // tops apart from bottoms, so this case is checked here.
  const LayerParameter param = ParseLayer(std::string(
      "name: 's' type: 'Scale' scale_param { bias_term: true ") + kScaleFillers + " }");
  vector<float> results[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
    if (gpu) layer->set_context(MakeGpuContext());
    Blob x(k2x3x4x5);
    FillUniform(&x, -1, 1, 5);
    layer->SetUp({&x}, {&x});
    for (auto& blob : layer->blobs()) std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.f);
    layer->Forward({&x}, {&x});
    FillGaussian(&x, 1.f, 6);  // overwrites data only: the diff is set next
    std::copy(x.cpu_data(), x.cpu_data() + x.count(), x.mutable_cpu_diff());
    layer->Backward({&x}, {true}, {&x});
    results[gpu].assign(x.cpu_diff(), x.cpu_diff() + x.count());
    for (auto& blob : layer->blobs()) {
      results[gpu].insert(results[gpu].end(), blob->cpu_diff(), blob->cpu_diff() + blob->count());
    }
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_NEAR(results[1][i], results[0][i], 1e-4f * std::max(1.f, std::fabs(results[0][i])))
        << "element " << i;
  }
}

TEST(GpuScaleLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 4}), s({3, 4});
  FillUniform(&x, -1, 1, 1);
  FillUniform(&s, -1, 1, 2);
  CheckGpuGradient(ParseLayer(std::string("name: 's' type: 'Scale' scale_param { "
                                          "bias_term: true ") + kScaleFillers + " }"),
                   {&x}, 1e-2f, 1e-3f);
  CheckGpuGradient(ParseLayer("name: 's' type: 'Scale' scale_param { axis: 1 }"), {&x, &s},
                   1e-2f, 1e-3f);
}

TEST(GpuBiasLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* axes : {"", "axis: 1 num_axes: 2", "num_axes: 0", "axis: 0 num_axes: -1"}) {
    SCOPED_TRACE(axes);
    ExpectGpuMatchesCpu(ParseLayer(std::string("name: 'b' type: 'Bias' bias_param { ") + axes +
                                   " filler { type: 'uniform' min: -1 max: 1 } }"),
                        {k2x3x4x5});
  }
  ExpectGpuMatchesCpu(ParseLayer("name: 'b' type: 'Bias' bias_param { axis: 2 }"),
                      {k2x3x4x5, {4, 5}});
}

TEST(GpuBiasLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 4}), b({3});
  FillUniform(&x, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  CheckGpuGradient(ParseLayer("name: 'b' type: 'Bias' bias_param { filler { type: 'uniform' "
                              "min: -1 max: 1 } }"),
                   {&x}, 1e-2f, 1e-3f);
  CheckGpuGradient(ParseLayer("name: 'b' type: 'Bias'"), {&x, &b}, 1e-2f, 1e-3f);
}

// ---- Concat, Slice, Split ----

TEST(GpuConcatLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Concat'"),
                      {{2, 3, 4, 5}, {2, 1, 4, 5}, {2, 4, 4, 5}});
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Concat' concat_param { axis: 0 }"),
                      {{2, 3, 4}, {5, 3, 4}});
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Concat' concat_param { axis: -1 }"),
                      {{2, 3, 4}, {2, 3, 1}});
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Concat'"), {{2, 3, 4}});  // shares
}

TEST(GpuConcatLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob a({2, 3, 2}), b({2, 2, 2});
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  CheckGpuGradient(ParseLayer("name: 'c' type: 'Concat'"), {&a, &b}, 1e-2f, 1e-3f);
}

TEST(GpuSliceLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer("name: 's' type: 'Slice' top: 'a' top: 'b' top: 'c' "
                                 "slice_param { slice_point: 1 slice_point: 4 }"),
                      {{2, 6, 4, 5}});
  ExpectGpuMatchesCpu(
      ParseLayer("name: 's' type: 'Slice' top: 'a' top: 'b' slice_param { axis: 0 }"),
      {{4, 3, 2}});
  ExpectGpuMatchesCpu(
      ParseLayer("name: 's' type: 'Slice' top: 'a' top: 'b' slice_param { axis: -1 }"),
      {{2, 3, 6}});
  ExpectGpuMatchesCpu(ParseLayer("name: 's' type: 'Slice' top: 'a'"), {{2, 3, 4}});  // shares
}

TEST(GpuSliceLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 5, 2});
  FillUniform(&x, -1, 1, 1);
  CheckGpuGradient(ParseLayer("name: 's' type: 'Slice' top: 'a' top: 'b' "
                              "slice_param { slice_point: 2 }"),
                   {&x}, 1e-2f, 1e-3f);
}

TEST(GpuSplitLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer("name: 's' type: 'Split' top: 'a' top: 'b' top: 'c'"),
                      {k2x3x4x5});
  ExpectGpuMatchesCpu(ParseLayer("name: 's' type: 'Split' top: 'a'"), {k2x3x4x5});
}

TEST(GpuSplitLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 2});
  FillUniform(&x, -1, 1, 1);
  CheckGpuGradient(ParseLayer("name: 's' type: 'Split' top: 'a' top: 'b' top: 'c'"), {&x},
                   1e-2f, 1e-3f);
}

// ---- Tile, Crop ----

TEST(GpuTileLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer("name: 't' type: 'Tile' tile_param { tiles: 3 }"), {k2x3x4x5});
  ExpectGpuMatchesCpu(ParseLayer("name: 't' type: 'Tile' tile_param { axis: 0 tiles: 2 }"),
                      {k2x3x4x5});
  ExpectGpuMatchesCpu(ParseLayer("name: 't' type: 'Tile' tile_param { axis: -1 tiles: 4 }"),
                      {k2x3x4x5});
  ExpectGpuMatchesCpu(ParseLayer("name: 't' type: 'Tile' tile_param { tiles: 1 }"), {{2, 3}});
}

TEST(GpuTileLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 2});
  FillUniform(&x, -1, 1, 1);
  CheckGpuGradient(ParseLayer("name: 't' type: 'Tile' tile_param { axis: 1 tiles: 3 }"), {&x},
                   1e-2f, 1e-3f);
}

TEST(GpuCropLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison only_first;
  only_first.propagate_down = {true, false};
  ExpectGpuMatchesCpu(
      ParseLayer("name: 'c' type: 'Crop' crop_param { axis: 2 offset: 1 offset: 2 }"),
      {{2, 3, 6, 7}, {2, 3, 4, 4}}, only_first);
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Crop' crop_param { axis: 1 offset: 1 }"),
                      {{2, 4, 5, 6}, {2, 2, 3, 4}}, only_first);
  ExpectGpuMatchesCpu(ParseLayer("name: 'c' type: 'Crop' crop_param { axis: 0 }"),
                      {{3, 4, 5}, {2, 4, 3}}, only_first);
}

TEST(GpuCropLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 4, 5}), reference({2, 3, 2, 3});
  FillUniform(&x, -1, 1, 1);
  CheckGpuGradient(ParseLayer("name: 'c' type: 'Crop' crop_param { axis: 2 offset: 1 }"),
                   {&x, &reference}, 1e-2f, 1e-3f, 0);
}

// ---- Flatten, Reshape, Silence: views and zeros ----

TEST(GpuViewLayersTest, FlattenAndReshapeMatchCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison views;  // tops share the bottoms' memory: nothing runs on the device
  views.expect_device_output = false;
  ExpectGpuMatchesCpu(ParseLayer("name: 'f' type: 'Flatten'"), {k2x3x4x5}, views);
  ExpectGpuMatchesCpu(
      ParseLayer("name: 'r' type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 dim: 5 } }"),
      {k2x3x4x5}, views);
}

TEST(GpuViewLayersTest, FlattenAndReshapeKeepDataOnTheDevice) {
  SKIP_WITHOUT_GPU();
  // The views must not pull data or gradients to the host: after device writes,
  // Forward and Backward leave the memories' heads on the device (any host access
  // would move them).
  for (const char* proto : {"name: 'f' type: 'Flatten'",
                            "name: 'r' type: 'Reshape' reshape_param { shape { dim: -1 } }"}) {
    SCOPED_TRACE(proto);
    std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(proto));
    layer->set_context(MakeGpuContext());
    Blob x(k2x3x4x5), top;
    layer->SetUp({&x}, {&top});
    x.mutable_gpu_data();
    layer->Forward({&x}, {&top});
    EXPECT_EQ(top.data()->head(), SyncedMemory::AT_GPU);
    top.mutable_gpu_diff();
    layer->Backward({&top}, {true}, {&x});
    EXPECT_EQ(x.diff()->head(), SyncedMemory::AT_GPU);
  }
}

TEST(GpuSilenceLayerTest, BackwardZeroesTheBottomDiffs) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<Layer> layer =
      LayerRegistry::CreateLayer(ParseLayer("name: 's' type: 'Silence'"));
  layer->set_context(MakeGpuContext());
  Blob a({2, 3}), b({4});
  layer->SetUp({&a, &b}, {});
  layer->Forward({&a, &b}, {});
  std::fill_n(a.mutable_cpu_diff(), a.count(), 9.f);
  std::fill_n(b.mutable_cpu_diff(), b.count(), 9.f);
  layer->Backward({}, {true, false}, {&a, &b});
  for (int i = 0; i < a.count(); ++i) EXPECT_EQ(a.cpu_diff()[i], 0.f);
  for (int i = 0; i < b.count(); ++i) EXPECT_EQ(b.cpu_diff()[i], 9.f);  // not asked for
}

// ---- Embed ----

const char kEmbed[] =
    "name: 'e' type: 'Embed' embed_param { num_output: 7 input_dim: 5 "
    "weight_filler { type: 'uniform' min: -1 max: 1 } "
    "bias_filler { type: 'uniform' min: -1 max: 1 } }";

TEST(GpuEmbedLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  // Many positions over few rows: repeated indices are what the weight gradient's
  // grouping has to get right.
  options.fill_bottom = [](int, Blob* bottom) { FillIndices(bottom, 5, 11); };
  options.propagate_down = {false};
  ExpectGpuMatchesCpu(ParseLayer(kEmbed), {{4, 9}}, options);
  LayerParameter no_bias = ParseLayer(kEmbed);
  no_bias.mutable_embed_param()->set_bias_term(false);
  ExpectGpuMatchesCpu(no_bias, {{3}}, options);
  options.propagate_down = {true};  // the indices' diff is zeroed
  ExpectGpuMatchesCpu(ParseLayer(kEmbed), {{2, 3}}, options);
}

TEST(GpuEmbedLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob indices({2, 3});
  const float values[] = {1, 3, 1, 0, 3, 3};
  std::copy(values, values + 6, indices.mutable_cpu_data());
  // check_bottom 1 names no bottom: only the weights are checked.
  CheckGpuGradient(ParseLayer(kEmbed), {&indices}, 1e-2f, 1e-3f, 1);
}

// Weight diffs accumulate (iter_size > 1, shared weights): with a nonzero diff on entry
// the GPU must add each position's gradient into the row in the CPU's order, so the
// result is bit-identical, not just close.
TEST(GpuEmbedLayerTest, WeightDiffAccumulatesExactlyLikeCpu) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<Layer> layers[2];
  Blob bottoms[2], tops[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    bottoms[gpu].Reshape({6, 9});
    FillIndices(&bottoms[gpu], 5, 11);  // 54 positions over 5 rows
    layers[gpu] = LayerRegistry::CreateLayer(ParseLayer(kEmbed));
    if (gpu) layers[gpu]->set_context(MakeGpuContext());
    layers[gpu]->SetUp({&bottoms[gpu]}, {&tops[gpu]});
  }
  for (size_t b = 0; b < layers[0]->blobs().size(); ++b) {
    const Blob& from = *layers[0]->blobs()[b];
    std::copy_n(from.cpu_data(), from.count(), layers[1]->blobs()[b]->mutable_cpu_data());
    Blob earlier(from.shape());  // the diff already there from an earlier pass
    FillUniform(&earlier, -3, 3, 40 + b);
    for (int side = 0; side < 2; ++side) {
      std::copy_n(earlier.cpu_data(), earlier.count(),
                  layers[side]->blobs()[b]->mutable_cpu_diff());
    }
  }
  Blob dy({6, 9, 7});
  FillGaussian(&dy, 1.f, 77);
  for (int side = 0; side < 2; ++side) {
    layers[side]->Forward({&bottoms[side]}, {&tops[side]});
    std::copy_n(dy.cpu_data(), dy.count(), tops[side].mutable_cpu_diff());
    layers[side]->Backward({&tops[side]}, {false}, {&bottoms[side]});
  }
  const Blob& cpu_diff = *layers[0]->blobs()[0];
  const Blob& gpu_diff = *layers[1]->blobs()[0];
  for (int64_t i = 0; i < cpu_diff.count(); ++i) {
    EXPECT_EQ(gpu_diff.cpu_diff()[i], cpu_diff.cpu_diff()[i]) << "weight diff " << i;
  }
}

TEST(GpuEmbedLayerTest, BadIndexIsTheSameError) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(kEmbed));
  layer->set_context(MakeGpuContext());
  Blob indices({3}), top;
  const float values[] = {1, 5, 0};
  std::copy(values, values + 3, indices.mutable_cpu_data());
  layer->SetUp({&indices}, {&top});
  try {
    layer->Forward({&indices}, {&top});
    FAIL() << "index 5 of 5 rows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("element 1"), std::string::npos) << e.what();
  }
}

// ---- MVN, Reduction ----

TEST(GpuMVNLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* p : {"", "normalize_variance: false", "across_channels: true",
                        "across_channels: true normalize_variance: false", "eps: 0.1"}) {
    SCOPED_TRACE(p);
    ExpectGpuMatchesCpu(ParseLayer(std::string("name: 'm' type: 'MVN' mvn_param { ") + p + " }"),
                        {k2x3x4x5});
  }
  // Groups longer than a block (the per-thread strides wrap) and a constant group.
  ExpectGpuMatchesCpu(ParseLayer("name: 'm' type: 'MVN'"), {{2, 2, 40, 50}});
  GpuComparison constant;
  constant.fill_bottom = [](int, Blob* bottom) {
    std::fill_n(bottom->mutable_cpu_data(), bottom->count(), 0.5f);
  };
  ExpectGpuMatchesCpu(ParseLayer("name: 'm' type: 'MVN'"), {{2, 3, 4}}, constant);
}

TEST(GpuMVNLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (const char* p : {"", "normalize_variance: false", "across_channels: true"}) {
    SCOPED_TRACE(p);
    Blob x({2, 3, 2, 2});
    FillUniform(&x, -1, 1, 1);
    CheckGpuGradient(ParseLayer(std::string("name: 'm' type: 'MVN' mvn_param { ") + p + " }"),
                     {&x}, 1e-2f, 2e-3f);
  }
}

TEST(GpuReductionLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    for (const char* axis : {"axis: 0", "axis: 1", "axis: -1"}) {
      SCOPED_TRACE(std::string(op) + " " + axis);
      ExpectGpuMatchesCpu(ParseLayer(std::string("name: 'r' type: 'Reduction' "
                                                 "reduction_param { operation: ") +
                                     op + " " + axis + " coeff: -1.5 }"),
                          {k2x3x4x5});
    }
  }
}

TEST(GpuReductionLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    SCOPED_TRACE(op);
    Blob x({2, 3, 4});
    FillUniform(&x, -1, 1, 1);
    CheckGpuGradient(ParseLayer(std::string("name: 'r' type: 'Reduction' reduction_param { "
                                            "axis: 1 coeff: 2 operation: ") + op + " }"),
                     {&x}, 1e-2f, 1e-3f, -1, 0.f, 0.02f);  // ASUM has a kink at 0
  }
}

// ---------------------------------------------------------------- issue 54's layers
// Filter, BatchReindex and Im2col keep the host path in GPU mode (their values move to
// and from the device as needed), SPP runs its inner layers on the device, Parameter
// hands over its blob: each must give the CPU's values and gradients in a GPU net.

TEST(GpuFilterLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.expect_device_output = false;
  options.propagate_down = {true, false};
  options.fill_bottom = [](int i, Blob* b) {
    if (i == 0) return FillUniform(b, -1, 1, 11);
    SetValues(b, {1, 0, 1, 1});  // items 0, 2 and 3 pass
  };
  ExpectGpuMatchesCpu(ParseLayer("name: 'f' type: 'Filter'"), {{4, 3, 2}, {4}}, options);
}

TEST(GpuBatchReindexLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.expect_device_output = false;
  options.propagate_down = {true, false};
  options.fill_bottom = [](int i, Blob* b) {
    if (i == 0) return FillUniform(b, -1, 1, 12);
    SetValues(b, {2, 0, 2, 1, 3});  // repeats, so backward must sum
  };
  ExpectGpuMatchesCpu(ParseLayer("name: 'r' type: 'BatchReindex'"), {{4, 3}, {5}}, options);
}

TEST(GpuIm2colLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.expect_device_output = false;
  ExpectGpuMatchesCpu(ParseLayer("name: 'i' type: 'Im2col' convolution_param { kernel_size: 3 "
                                 "stride: 2 pad: 1 }"),
                      {{2, 3, 6, 5}}, options);
}

TEST(GpuSppLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* pool : {"MAX", "AVE"}) {
    SCOPED_TRACE(pool);
    ExpectGpuMatchesCpu(ParseLayer(std::string("name: 's' type: 'SPP' spp_param { "
                                               "pyramid_height: 3 pool: ") +
                                   pool + " }"),
                        {{2, 3, 9, 7}});
  }
}

TEST(GpuParameterLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.expect_device_output = false;
  ExpectGpuMatchesCpu(ParseLayer("name: 'p' type: 'Parameter' parameter_param { shape { dim: 3 "
                                 "dim: 4 } }"),
                      {}, options);
}

}  // namespace caffe
