// oneDNN (DNNL) engine: every DNNL layer against its reference layer on identical
// inputs and weights (forward tops, bottom diffs, accumulated weight diffs, BatchNorm's
// running statistics), over shapes that exercise groups, dilation, stride/padding,
// CEIL pooling edges and the fallbacks to the reference code; a finite-difference
// check of the DNNL convolution; and engine selection through the layer registry.
// Suites that need oneDNN skip when the build has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <typeinfo>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/layers/relu_layer.hpp"
#include "caffe/net.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

#ifdef USE_DNNL
#include "caffe/layers/dnnl_batch_norm_layer.hpp"
#include "caffe/layers/dnnl_conv_layer.hpp"
#include "caffe/layers/dnnl_inner_product_layer.hpp"
#include "caffe/layers/dnnl_lrn_layer.hpp"
#include "caffe/layers/dnnl_pooling_layer.hpp"
#include "caffe/layers/dnnl_relu_layer.hpp"
#endif

namespace caffe {
namespace {

#ifdef USE_DNNL

constexpr float kRelativeTolerance = 1e-4f;

// Elementwise |actual - expected| <= tol * max(|expected|, rms(expected)): relative
// where values are large, and not fooled by sums that cancel to nearly zero.
void ExpectClose(const float* actual, const float* expected, int64_t n, const string& what) {
  double sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(expected[i]) * expected[i];
  const double rms = n > 0 ? std::sqrt(sum_sq / n) : 0.0;
  int64_t failures = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double scale = std::max({std::fabs(static_cast<double>(expected[i])), rms, 1e-6});
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]) / scale;
    if (error >= kRelativeTolerance && ++failures <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: DNNL " << actual[i] << ", reference "
                    << expected[i] << " (relative error " << error << ")";
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " elements differ";
}

struct Options {
  int num_bottoms = 1;
  bool in_place = false;
  bool expect_dnnl = true;  // false: the DNNL layer must have fallen back
  int passes = 2;           // forward/backward rounds (running statistics, reuse)
  bool backward = true;
};

// Runs a reference layer and its DNNL variant side by side from the same bottoms,
// weights, weight diffs (non-zero, to see accumulation) and top diffs, and compares
// everything they produce.
template <typename Reference, typename Dnnl>
void CompareWithReference(const string& param_text, const vector<int64_t>& bottom_shape,
                          const Options& options = Options()) {
  SCOPED_TRACE(param_text + " on " + ShapeToString(bottom_shape));
  const LayerParameter param = ParseLayer(param_text);
  Reference reference(param);
  Dnnl dnnl(param);
  const int nb = options.num_bottoms;
  vector<Blob> ref_bottom_blobs(nb), dnnl_bottom_blobs(nb), ref_top_blobs(nb),
      dnnl_top_blobs(nb);
  vector<Blob*> ref_bottom, dnnl_bottom, ref_top, dnnl_top;
  for (int i = 0; i < nb; ++i) {
    ref_bottom_blobs[i].Reshape(bottom_shape);
    dnnl_bottom_blobs[i].Reshape(bottom_shape);
    ref_bottom.push_back(&ref_bottom_blobs[i]);
    dnnl_bottom.push_back(&dnnl_bottom_blobs[i]);
    ref_top.push_back(options.in_place ? &ref_bottom_blobs[i] : &ref_top_blobs[i]);
    dnnl_top.push_back(options.in_place ? &dnnl_bottom_blobs[i] : &dnnl_top_blobs[i]);
  }
  uint64_t seed = 100;
  for (int i = 0; i < nb; ++i) FillUniform(ref_bottom[i], -1.f, 1.f, seed++);
  reference.SetUp(ref_bottom, ref_top);
  dnnl.SetUp(dnnl_bottom, dnnl_top);
  ASSERT_EQ(reference.blobs().size(), dnnl.blobs().size());
  for (size_t b = 0; b < reference.blobs().size(); ++b) {
    Blob& ref_blob = *reference.blobs()[b];
    if (ref_blob.count() > 0 && std::string(reference.type()) != "BatchNorm") {
      FillUniform(&ref_blob, -1.f, 1.f, seed++);
    }
    dnnl.blobs()[b]->CopyFrom(ref_blob);
  }
  EXPECT_EQ(dnnl.uses_dnnl(), options.expect_dnnl);

  for (int pass = 0; pass < options.passes; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    for (int i = 0; i < nb; ++i) {
      FillUniform(ref_bottom[i], -1.f, 1.f, seed++);
      dnnl_bottom[i]->CopyFrom(*ref_bottom[i]);
    }
    reference.Forward(ref_bottom, ref_top);
    dnnl.Forward(dnnl_bottom, dnnl_top);
    for (int i = 0; i < nb; ++i) {
      ASSERT_EQ(dnnl_top[i]->shape(), ref_top[i]->shape());
      ExpectClose(dnnl_top[i]->cpu_data(), ref_top[i]->cpu_data(), ref_top[i]->count(),
                  "top " + std::to_string(i));
    }
    for (size_t b = 0; b < reference.blobs().size(); ++b) {
      ExpectClose(dnnl.blobs()[b]->cpu_data(), reference.blobs()[b]->cpu_data(),
                  reference.blobs()[b]->count(), "blob " + std::to_string(b) + " data");
    }
    if (!options.backward) continue;

    for (int i = 0; i < nb; ++i) {
      Blob diff;
      diff.ReshapeLike(*ref_top[i]);
      FillUniform(&diff, -1.f, 1.f, seed++);
      std::copy_n(diff.cpu_data(), diff.count(), ref_top[i]->mutable_cpu_diff());
      std::copy_n(diff.cpu_data(), diff.count(), dnnl_top[i]->mutable_cpu_diff());
      if (!options.in_place) {
        // Bottom diffs are overwritten: start them from garbage.
        std::fill_n(ref_bottom[i]->mutable_cpu_diff(), ref_bottom[i]->count(), 7.f);
        std::fill_n(dnnl_bottom[i]->mutable_cpu_diff(), dnnl_bottom[i]->count(), -3.f);
      }
    }
    for (size_t b = 0; b < reference.blobs().size(); ++b) {
      Blob start;
      start.ReshapeLike(*reference.blobs()[b]);
      FillUniform(&start, -1.f, 1.f, seed++);
      std::copy_n(start.cpu_data(), start.count(), reference.blobs()[b]->mutable_cpu_diff());
      std::copy_n(start.cpu_data(), start.count(), dnnl.blobs()[b]->mutable_cpu_diff());
    }
    const vector<bool> propagate(nb, true);
    reference.Backward(ref_top, propagate, ref_bottom);
    dnnl.Backward(dnnl_top, propagate, dnnl_bottom);
    for (int i = 0; i < nb; ++i) {
      ExpectClose(dnnl_bottom[i]->cpu_diff(), ref_bottom[i]->cpu_diff(), ref_bottom[i]->count(),
                  "bottom diff " + std::to_string(i));
    }
    for (size_t b = 0; b < reference.blobs().size(); ++b) {
      ExpectClose(dnnl.blobs()[b]->cpu_diff(), reference.blobs()[b]->cpu_diff(),
                  reference.blobs()[b]->count(), "blob " + std::to_string(b) + " diff");
    }
  }
}

string Conv(const string& fields) {
  return "name: 'conv' type: 'Convolution' convolution_param { " + fields + " }";
}

TEST(DnnlConvolutionTest, MatchesReference) {
  using Ref = ConvolutionLayer;
  using Dnnl = DnnlConvolutionLayer;
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 4 kernel_size: 3 pad: 1"), {2, 3, 9, 8});
  CompareWithReference<Ref, Dnnl>(
      Conv("num_output: 5 kernel_h: 3 kernel_w: 5 stride_h: 2 stride_w: 1 pad_h: 2 pad_w: 1"),
      {2, 3, 11, 10});
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 6 kernel_size: 3 group: 2"), {2, 4, 7, 7});
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 4 kernel_size: 3 dilation: 2 pad: 2"),
                                  {2, 3, 9, 9});
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 3 kernel_size: 1 bias_term: false"),
                                  {3, 5, 6, 4});
  CompareWithReference<Ref, Dnnl>(
      Conv("num_output: 8 kernel_size: 3 group: 4 dilation: 2 stride: 2 pad: 3"),
      {2, 8, 13, 12});
  // Output sizes where Caffe's floor rounding drops input rows.
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 2 kernel_size: 4 stride: 3 pad: 1"),
                                  {1, 2, 10, 9});
}

TEST(DnnlConvolutionTest, MatchesReferenceOnBlockedLayouts) {
  // Channel counts that make oneDNN pick blocked layouts, so the reorders run.
  using Ref = ConvolutionLayer;
  using Dnnl = DnnlConvolutionLayer;
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 32 kernel_size: 3 pad: 1"), {2, 16, 8, 8});
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 20 kernel_size: 5"), {4, 1, 28, 28});
  CompareWithReference<Ref, Dnnl>(Conv("num_output: 32 kernel_size: 3 group: 2 stride: 2"),
                                  {2, 32, 9, 9});
}

TEST(DnnlConvolutionTest, SeveralBottomsShareWeights) {
  Options options;
  options.num_bottoms = 2;
  CompareWithReference<ConvolutionLayer, DnnlConvolutionLayer>(
      Conv("num_output: 4 kernel_size: 3 pad: 1"), {2, 3, 6, 5}, options);
}

TEST(DnnlConvolutionTest, ThreeDimensionalFallsBackToReference) {
  Options options;
  options.expect_dnnl = false;
  CompareWithReference<ConvolutionLayer, DnnlConvolutionLayer>(
      Conv("num_output: 2 kernel_size: 2"), {1, 2, 4, 4, 3}, options);
}

TEST(DnnlConvolutionTest, ReshapeAndThreadCountRebuild) {
  // A new bottom shape and a new thread count both rebuild the primitives; results
  // must not change either way.
  const int threads = NumThreads();
  for (int t : {1, 2}) {
    SetNumThreads(t);
    CompareWithReference<ConvolutionLayer, DnnlConvolutionLayer>(
        Conv("num_output: 16 kernel_size: 3 pad: 1"), {2, 8, 6 + t, 7});
  }
  SetNumThreads(threads);

  DnnlConvolutionLayer layer(ParseLayer(Conv("num_output: 2 kernel_size: 3")));
  Blob x({1, 2, 5, 5}), y;
  FillUniform(&x, -1.f, 1.f);
  layer.SetUp({&x}, {&y});
  layer.Forward({&x}, {&y});
  EXPECT_EQ(y.shape(), (vector<int64_t>{1, 2, 3, 3}));
  x.Reshape({3, 2, 8, 6});
  FillUniform(&x, -1.f, 1.f);
  layer.Forward({&x}, {&y});
  EXPECT_EQ(y.shape(), (vector<int64_t>{3, 2, 6, 4}));
  ConvolutionLayer reference(ParseLayer(Conv("num_output: 2 kernel_size: 3")));
  Blob y_ref;
  reference.SetUp({&x}, {&y_ref});
  reference.blobs()[0]->CopyFrom(*layer.blobs()[0]);
  reference.blobs()[1]->CopyFrom(*layer.blobs()[1]);
  reference.Forward({&x}, {&y_ref});
  ExpectClose(y.cpu_data(), y_ref.cpu_data(), y.count(), "reshaped top");
}

TEST(DnnlConvolutionTest, Gradient) {
  DnnlConvolutionLayer layer(ParseLayer(
      Conv("num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 dilation: 2 "
           "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.3 }")));
  Blob x({2, 4, 6, 5}), y;
  FillUniform(&x, -1.f, 1.f);
  GradientChecker checker(1e-2f, 1e-2f);
  checker.CheckGradient(&layer, {&x}, {&y});
  EXPECT_TRUE(layer.uses_dnnl());
  // Bottom (240) + weights (4 * 2 * 9) + bias (4).
  EXPECT_EQ(checker.checked(), 240 + 72 + 4);
}

TEST(DnnlConvolutionTest, OnlyRequestedGradientsAreTouched) {
  const LayerParameter param = ParseLayer(Conv("num_output: 16 kernel_size: 3 pad: 1"));
  ConvolutionLayer reference(param);
  DnnlConvolutionLayer dnnl(param);
  Blob x({2, 16, 5, 5}), y_ref, y;
  FillUniform(&x, -1.f, 1.f);
  reference.SetUp({&x}, {&y_ref});
  dnnl.SetUp({&x}, {&y});
  for (int b = 0; b < 2; ++b) {
    dnnl.blobs()[b]->CopyFrom(*reference.blobs()[b]);
    std::fill_n(reference.blobs()[b]->mutable_cpu_diff(), reference.blobs()[b]->count(), 0.5f);
    std::fill_n(dnnl.blobs()[b]->mutable_cpu_diff(), dnnl.blobs()[b]->count(), 0.5f);
  }
  reference.set_param_propagate_down(1, false);
  dnnl.set_param_propagate_down(1, false);
  reference.Forward({&x}, {&y_ref});
  dnnl.Forward({&x}, {&y});
  FillUniform(&y_ref, -1.f, 1.f);  // any top diff; copy it into both
  std::copy_n(y_ref.cpu_data(), y.count(), y_ref.mutable_cpu_diff());
  std::copy_n(y_ref.cpu_data(), y.count(), y.mutable_cpu_diff());
  std::fill_n(x.mutable_cpu_diff(), x.count(), 9.f);
  reference.Backward({&y_ref}, {false}, {&x});
  dnnl.Backward({&y}, {false}, {&x});
  for (int64_t i = 0; i < x.count(); ++i) ASSERT_EQ(x.cpu_diff()[i], 9.f) << i;
  for (int64_t i = 0; i < dnnl.blobs()[1]->count(); ++i) {
    ASSERT_EQ(dnnl.blobs()[1]->cpu_diff()[i], 0.5f) << i;
  }
  ExpectClose(dnnl.blobs()[0]->cpu_diff(), reference.blobs()[0]->cpu_diff(),
              reference.blobs()[0]->count(), "weight diff");
}

TEST(DnnlConvolutionTest, BadParametersStillRaiseErrors) {
  DnnlConvolutionLayer layer(ParseLayer(Conv("num_output: 4 kernel_size: 3 group: 2")));
  Blob x({1, 3, 5, 5}), y;
  try {
    layer.SetUp({&x}, {&y});
    FAIL() << "expected caffe::Error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("conv"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("group"), string::npos) << e.what();
  }
}

string Deconv(const string& fields) {
  return "name: 'deconv' type: 'Deconvolution' convolution_param { " + fields + " }";
}

TEST(DnnlDeconvolutionTest, MatchesReference) {
  using Ref = DeconvolutionLayer;
  using Dnnl = DnnlDeconvolutionLayer;
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 4 kernel_size: 3"), {2, 3, 5, 4});
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 3 kernel_size: 4 stride: 2 pad: 1"),
                                  {2, 5, 6, 7});
  CompareWithReference<Ref, Dnnl>(
      Deconv("num_output: 5 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0"),
      {1, 3, 5, 6});
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 6 kernel_size: 3 group: 2 stride: 2"),
                                  {2, 4, 5, 5});
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 4 kernel_size: 3 dilation: 2 pad: 1"),
                                  {2, 3, 6, 6});
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 3 kernel_size: 1 bias_term: false"),
                                  {3, 5, 4, 4});
  CompareWithReference<Ref, Dnnl>(
      Deconv("num_output: 8 kernel_size: 3 group: 4 dilation: 2 stride: 2 pad: 2 "
             "bias_term: false"),
      {2, 8, 6, 5});
}

TEST(DnnlDeconvolutionTest, MatchesReferenceOnBlockedLayouts) {
  // Channel counts that make oneDNN pick blocked layouts, so the reorders run.
  using Ref = DeconvolutionLayer;
  using Dnnl = DnnlDeconvolutionLayer;
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 32 kernel_size: 4 stride: 2 pad: 1"),
                                  {2, 16, 6, 6});
  CompareWithReference<Ref, Dnnl>(Deconv("num_output: 32 kernel_size: 3 group: 2 stride: 2"),
                                  {2, 32, 5, 5});
}

TEST(DnnlDeconvolutionTest, SeveralBottomsAndFallback) {
  Options two;
  two.num_bottoms = 2;
  CompareWithReference<DeconvolutionLayer, DnnlDeconvolutionLayer>(
      Deconv("num_output: 4 kernel_size: 3 stride: 2"), {2, 3, 4, 5}, two);
  Options fallback;
  fallback.expect_dnnl = false;
  CompareWithReference<DeconvolutionLayer, DnnlDeconvolutionLayer>(
      Deconv("num_output: 2 kernel_size: 2"), {1, 2, 3, 3, 2}, fallback);
}

TEST(DnnlDeconvolutionTest, ReshapeRebuilds) {
  DnnlDeconvolutionLayer layer(ParseLayer(Deconv("num_output: 2 kernel_size: 3 stride: 2")));
  Blob x({1, 2, 3, 3}), y;
  FillUniform(&x, -1.f, 1.f);
  layer.SetUp({&x}, {&y});
  layer.Forward({&x}, {&y});
  EXPECT_EQ(y.shape(), (vector<int64_t>{1, 2, 7, 7}));
  x.Reshape({3, 2, 4, 2});
  FillUniform(&x, -1.f, 1.f);
  layer.Forward({&x}, {&y});
  EXPECT_EQ(y.shape(), (vector<int64_t>{3, 2, 9, 5}));
  DeconvolutionLayer reference(ParseLayer(Deconv("num_output: 2 kernel_size: 3 stride: 2")));
  Blob y_ref;
  reference.SetUp({&x}, {&y_ref});
  reference.blobs()[0]->CopyFrom(*layer.blobs()[0]);
  reference.blobs()[1]->CopyFrom(*layer.blobs()[1]);
  reference.Forward({&x}, {&y_ref});
  ExpectClose(y.cpu_data(), y_ref.cpu_data(), y.count(), "reshaped top");
}

TEST(DnnlDeconvolutionTest, Gradient) {
  DnnlDeconvolutionLayer layer(
      ParseLayer(Deconv("num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 dilation: 2 "
                        "weight_filler { type: 'gaussian' std: 0.3 } "
                        "bias_filler { type: 'gaussian' std: 0.3 }")));
  Blob x({2, 4, 3, 3}), y;
  FillUniform(&x, -1.f, 1.f);
  GradientChecker checker(1e-2f, 1e-2f);
  checker.CheckGradient(&layer, {&x}, {&y});
  EXPECT_TRUE(layer.uses_dnnl());
  // Bottom (72) + weights (4 x 2 x 9) + bias (4).
  EXPECT_EQ(checker.checked(), 72 + 72 + 4);
}

TEST(DnnlDeconvolutionTest, OnlyRequestedGradientsAreTouched) {
  const LayerParameter param = ParseLayer(Deconv("num_output: 16 kernel_size: 2 stride: 2"));
  DeconvolutionLayer reference(param);
  DnnlDeconvolutionLayer dnnl(param);
  Blob x({2, 16, 4, 4}), y_ref, y;
  FillUniform(&x, -1.f, 1.f);
  reference.SetUp({&x}, {&y_ref});
  dnnl.SetUp({&x}, {&y});
  for (int b = 0; b < 2; ++b) {
    dnnl.blobs()[b]->CopyFrom(*reference.blobs()[b]);
    std::fill_n(reference.blobs()[b]->mutable_cpu_diff(), reference.blobs()[b]->count(), 0.5f);
    std::fill_n(dnnl.blobs()[b]->mutable_cpu_diff(), dnnl.blobs()[b]->count(), 0.5f);
  }
  reference.set_param_propagate_down(1, false);
  dnnl.set_param_propagate_down(1, false);
  reference.Forward({&x}, {&y_ref});
  dnnl.Forward({&x}, {&y});
  FillUniform(&y_ref, -1.f, 1.f);
  std::copy_n(y_ref.cpu_data(), y.count(), y_ref.mutable_cpu_diff());
  std::copy_n(y_ref.cpu_data(), y.count(), y.mutable_cpu_diff());
  std::fill_n(x.mutable_cpu_diff(), x.count(), 9.f);
  reference.Backward({&y_ref}, {false}, {&x});
  dnnl.Backward({&y}, {false}, {&x});
  for (int64_t i = 0; i < x.count(); ++i) ASSERT_EQ(x.cpu_diff()[i], 9.f) << i;
  for (int64_t i = 0; i < dnnl.blobs()[1]->count(); ++i) {
    ASSERT_EQ(dnnl.blobs()[1]->cpu_diff()[i], 0.5f) << i;
  }
  ExpectClose(dnnl.blobs()[0]->cpu_diff(), reference.blobs()[0]->cpu_diff(),
              reference.blobs()[0]->count(), "weight diff");
}

TEST(DnnlDeconvolutionTest, BadParametersStillRaiseErrors) {
  DnnlDeconvolutionLayer layer(ParseLayer(Deconv("num_output: 4 kernel_size: 3 group: 2")));
  Blob x({1, 3, 5, 5}), y;
  try {
    layer.SetUp({&x}, {&y});
    FAIL() << "expected caffe::Error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("deconv"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("group"), string::npos) << e.what();
  }
}

string InnerProduct(const string& fields) {
  return "name: 'ip' type: 'InnerProduct' inner_product_param { " + fields + " }";
}

TEST(DnnlInnerProductTest, MatchesReference) {
  using Ref = InnerProductLayer;
  using Dnnl = DnnlInnerProductLayer;
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 5"), {4, 10});
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 7"), {3, 2, 4, 5});
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 6 transpose: true"), {5, 9});
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 3 bias_term: false"), {2, 8});
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 4 axis: 2"), {2, 3, 5});
  CompareWithReference<Ref, Dnnl>(InnerProduct("num_output: 64"), {16, 300});
}

string Pool(const string& fields) {
  return "name: 'pool' type: 'Pooling' pooling_param { " + fields + " }";
}

// Asks for oneDNN explicitly: under the DEFAULT engine the layer may pass oneDNN's
// reference kernels on to PoolingLayer's (MeasuredDefaultSkipsOneDnnReferenceKernels).
string DnnlPool(const string& fields) { return Pool(fields + " engine: DNNL"); }

TEST(DnnlPoolingTest, MaxMatchesReference) {
  using Ref = PoolingLayer;
  using Dnnl = DnnlPoolingLayer;
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 3 stride: 2"), {2, 3, 7, 7});
  // CEIL needs an extra row and column past the image.
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 3 stride: 2"), {2, 3, 8, 8});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 2 stride: 2"), {2, 3, 7, 6});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 3 stride: 2 pad: 1"),
                                  {2, 3, 6, 7});
  // Caffe's rule drops a last window that would start in the right padding.
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 2 stride: 2 pad: 1"),
                                  {1, 2, 5, 5});
  CompareWithReference<Ref, Dnnl>(
      DnnlPool("pool: MAX kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 0"),
      {2, 2, 9, 6});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR"),
                                  {2, 3, 8, 8});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX global_pooling: true"), {2, 5, 4, 3});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: MAX kernel_size: 3 stride: 2"), {4, 32, 15, 15});
}

TEST(DnnlPoolingTest, AverageMatchesReference) {
  using Ref = PoolingLayer;
  using Dnnl = DnnlPoolingLayer;
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 3 stride: 2"), {2, 3, 7, 7});
  // Windows CEIL pushes past the padded image: Caffe divides by the clipped size.
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 3 stride: 2"), {2, 3, 8, 8});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 3 stride: 2 pad: 1"),
                                  {2, 3, 6, 6});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 3 stride: 2 pad: 1"),
                                  {2, 3, 7, 7});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 2 stride: 2 pad: 1"),
                                  {1, 2, 5, 5});
  CompareWithReference<Ref, Dnnl>(
      DnnlPool("pool: AVE kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_w: 1"),
      {2, 2, 5, 8});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE kernel_size: 3 stride: 2 round_mode: FLOOR"),
                                  {2, 3, 8, 8});
  CompareWithReference<Ref, Dnnl>(DnnlPool("pool: AVE global_pooling: true"), {2, 5, 8, 8});
}

TEST(DnnlPoolingTest, UnsupportedConfigurationsFallBack) {
  Options options;
  options.expect_dnnl = false;
  using Ref = PoolingLayer;
  using Dnnl = DnnlPoolingLayer;
  // A window entirely past the image (stride > kernel with CEIL).
  CompareWithReference<Ref, Dnnl>(Pool("pool: MAX kernel_size: 1 stride: 3"), {1, 2, 5, 5},
                                  options);
  CompareWithReference<Ref, Dnnl>(Pool("pool: AVE kernel_size: 1 stride: 3"), {1, 2, 5, 5},
                                  options);
  // STOCHASTIC in TEST (deterministic).
  CompareWithReference<Ref, Dnnl>(
      "phase: TEST " + Pool("pool: STOCHASTIC kernel_size: 2 stride: 2"), {1, 2, 4, 4}, options);
}

TEST(DnnlPoolingTest, OneDnnReferenceKernelNames) {
  EXPECT_TRUE(IsOneDnnReferenceKernel("simple_nchw:any"));
  EXPECT_TRUE(IsOneDnnReferenceKernel("ref:any"));
  EXPECT_FALSE(IsOneDnnReferenceKernel("jit:avx2"));
  EXPECT_FALSE(IsOneDnnReferenceKernel("jit_uni:avx512_core"));
  EXPECT_FALSE(IsOneDnnReferenceKernel(""));
}

TEST(DnnlPoolingTest, MeasuredDefaultSkipsOneDnnReferenceKernels) {
  // LeNet's pool1: on an AVX2 CPU oneDNN has only simple_nchw for the plain layout.
  const vector<int64_t> shape{4, 20, 24, 24};
  const string fields = "pool: MAX kernel_size: 2 stride: 2";
  DnnlPoolingLayer forced(ParseLayer(DnnlPool(fields)));
  Blob x(shape), y;
  FillUniform(&x, -1.f, 1.f);
  forced.SetUp({&x}, {&y});
  ASSERT_TRUE(forced.uses_dnnl());
  ASSERT_FALSE(forced.dnnl_implementation().empty());
  const bool reference_kernel = IsOneDnnReferenceKernel(forced.dnnl_implementation());
  SCOPED_TRACE("oneDNN picked " + forced.dnnl_implementation());

  // The DEFAULT engine (no engine field, the measured default) runs oneDNN only where
  // it has a vector kernel, and gives the reference result either way.
  Options options;
  options.expect_dnnl = !reference_kernel;
  CompareWithReference<PoolingLayer, DnnlPoolingLayer>(Pool(fields), shape, options);

  // A forced default engine keeps oneDNN whatever kernel it picked.
  Context dnnl_default;
  dnnl_default.set_default_engine(DefaultEngine::DNNL);
  DnnlPoolingLayer by_flag(ParseLayer(Pool(fields)));
  by_flag.set_context(std::make_shared<Context>(dnnl_default));
  Blob y2;
  by_flag.SetUp({&x}, {&y2});
  EXPECT_TRUE(by_flag.uses_dnnl());
}

TEST(DnnlPoolingTest, MaskTopFallsBack) {
  const LayerParameter param = ParseLayer(Pool("pool: MAX kernel_size: 2 stride: 2"));
  PoolingLayer reference(param);
  DnnlPoolingLayer dnnl(param);
  Blob x({1, 2, 4, 4}), y_ref, mask_ref, y, mask;
  FillUniform(&x, -1.f, 1.f);
  reference.SetUp({&x}, {&y_ref, &mask_ref});
  dnnl.SetUp({&x}, {&y, &mask});
  EXPECT_FALSE(dnnl.uses_dnnl());
  reference.Forward({&x}, {&y_ref, &mask_ref});
  dnnl.Forward({&x}, {&y, &mask});
  ExpectClose(mask.cpu_data(), mask_ref.cpu_data(), mask.count(), "mask");
}

string Lrn(const string& fields) {
  return "name: 'norm' type: 'LRN' lrn_param { " + fields + " }";
}

TEST(DnnlLRNTest, MatchesReference) {
  using Ref = LRNLayer;
  using Dnnl = DnnlLRNLayer;
  CompareWithReference<Ref, Dnnl>(Lrn("local_size: 5 alpha: 0.5 beta: 0.75"), {2, 7, 3, 4});
  CompareWithReference<Ref, Dnnl>(Lrn("local_size: 3 alpha: 2 beta: 0.5 k: 2"), {2, 4, 5, 5});
  CompareWithReference<Ref, Dnnl>(Lrn("local_size: 5 alpha: 0.0001 beta: 0.75"), {2, 32, 6, 6});
  Options options;
  options.expect_dnnl = false;
  CompareWithReference<Ref, Dnnl>(
      Lrn("local_size: 3 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL"), {2, 3, 5, 5},
      options);
}

string Relu(const string& fields) { return "name: 'relu' type: 'ReLU' " + fields; }

TEST(DnnlReLUTest, MatchesReference) {
  using Ref = ReLULayer;
  using Dnnl = DnnlReLULayer;
  CompareWithReference<Ref, Dnnl>(Relu(""), {2, 3, 4, 5});
  CompareWithReference<Ref, Dnnl>(Relu("relu_param { negative_slope: 0.1 }"), {3, 7});
  Options in_place;
  in_place.in_place = true;
  CompareWithReference<Ref, Dnnl>(Relu(""), {2, 3, 4, 5}, in_place);
  CompareWithReference<Ref, Dnnl>(Relu("relu_param { negative_slope: 0.25 }"), {4, 9, 2},
                                  in_place);
}

string BatchNorm(const string& fields) {
  return "name: 'bn' type: 'BatchNorm' batch_norm_param { " + fields + " }";
}

TEST(DnnlBatchNormTest, TrainMatchesReferenceIncludingRunningStatistics) {
  using Ref = BatchNormLayer;
  using Dnnl = DnnlBatchNormLayer;
  Options options;
  options.passes = 3;
  CompareWithReference<Ref, Dnnl>(BatchNorm(""), {4, 3, 5, 6}, options);
  CompareWithReference<Ref, Dnnl>(BatchNorm("moving_average_fraction: 0.9 eps: 0.001"),
                                  {8, 5}, options);
  CompareWithReference<Ref, Dnnl>(BatchNorm(""), {2, 4, 3, 2, 3}, options);
  options.in_place = true;
  CompareWithReference<Ref, Dnnl>(BatchNorm(""), {4, 16, 5, 5}, options);
}

TEST(DnnlBatchNormTest, GlobalStatisticsMatchReference) {
  // Gather statistics in TRAIN, then use them as the running estimates.
  const LayerParameter train = ParseLayer(BatchNorm(""));
  BatchNormLayer gather(train);
  Blob x({6, 3, 4, 4}), y;
  FillUniform(&x, -2.f, 3.f);
  gather.SetUp({&x}, {&y});
  gather.Forward({&x}, {&y});
  gather.Forward({&x}, {&y});

  LayerParameter test = ParseLayer("phase: TEST " + BatchNorm(""));
  for (int i = 0; i < 3; ++i) gather.blobs()[i]->ToProto(test.add_blobs());
  Options options;
  options.passes = 2;
  options.expect_dnnl = false;  // global statistics run the reference loop
  // Round-trip through the prototxt so both layers start from the gathered blobs.
  CompareWithReference<BatchNormLayer, DnnlBatchNormLayer>(test.DebugString(), {6, 3, 4, 4},
                                                           options);
}

// ---- engine selection through the registry ----

TEST(DnnlEngineSelectionTest, EngineFieldPicksTheClass) {
  auto conv = [](const string& engine) {
    return LayerRegistry::CreateLayer(
        ParseLayer(Conv("num_output: 2 kernel_size: 3 engine: " + engine)));
  };
  EXPECT_NE(dynamic_cast<DnnlConvolutionLayer*>(conv("DNNL").get()), nullptr);
  EXPECT_EQ(dynamic_cast<DnnlConvolutionLayer*>(conv("CAFFE").get()), nullptr);
  EXPECT_NE(dynamic_cast<ConvolutionLayer*>(conv("CAFFE").get()), nullptr);
  auto pool = LayerRegistry::CreateLayer(ParseLayer(Pool("pool: MAX kernel_size: 2 engine: DNNL")));
  EXPECT_NE(dynamic_cast<DnnlPoolingLayer*>(pool.get()), nullptr);
  auto lrn = LayerRegistry::CreateLayer(ParseLayer(Lrn("engine: CAFFE")));
  EXPECT_EQ(dynamic_cast<DnnlLRNLayer*>(lrn.get()), nullptr);
  auto relu = LayerRegistry::CreateLayer(ParseLayer(Relu("relu_param { engine: DNNL }")));
  EXPECT_NE(dynamic_cast<DnnlReLULayer*>(relu.get()), nullptr);
  auto bn = LayerRegistry::CreateLayer(ParseLayer(BatchNorm("engine: DNNL")));
  EXPECT_NE(dynamic_cast<DnnlBatchNormLayer*>(bn.get()), nullptr);
  auto deconv = [](const string& engine) {
    return LayerRegistry::CreateLayer(
        ParseLayer(Deconv("num_output: 2 kernel_size: 3 engine: " + engine)));
  };
  EXPECT_NE(dynamic_cast<DnnlDeconvolutionLayer*>(deconv("DNNL").get()), nullptr);
  EXPECT_EQ(dynamic_cast<DnnlDeconvolutionLayer*>(deconv("CAFFE").get()), nullptr);
  EXPECT_NE(dynamic_cast<DeconvolutionLayer*>(deconv("CAFFE").get()), nullptr);
}

Context ContextWithDefault(DefaultEngine engine) {
  Context context;
  context.set_default_engine(engine);
  return context;
}

// The class of every layer of `net`, in order.
vector<string> LayerClasses(const Net& net) {
  vector<string> classes;
  for (const auto& layer : net.layers()) classes.push_back(typeid(*layer).name());
  return classes;
}

TEST(DnnlEngineSelectionTest, ThreadCountDoesNotChangeTheNet) {
  // A thread count chosen by -threads must not pick different engines: the same context
  // builds the same net at 1 and at 2 threads (oneDNN's convolution, the reference
  // batch norm, which measured faster at both).
  const string model = R"(
    layer { name: 'data' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c' }
    layer { name: 'relu' type: 'ReLU' bottom: 'c' top: 'c' }
    layer { name: 'pool' type: 'Pooling' bottom: 'c' top: 'p' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'p' top: 'y' inner_product_param { num_output: 2 } }
  )";
  const int threads = NumThreads();
  const NetParameter param = ParseNet(model);
  SetNumThreads(1);
  Net one(param, std::make_shared<Context>());
  SetNumThreads(2);
  Net two(param, std::make_shared<Context>());
  SetNumThreads(threads);
  EXPECT_EQ(LayerClasses(one), LayerClasses(two));
  for (const Net* net : {&one, &two}) {
    EXPECT_NE(dynamic_cast<DnnlConvolutionLayer*>(net->layer_by_name("conv").get()), nullptr);
    EXPECT_EQ(dynamic_cast<DnnlBatchNormLayer*>(net->layer_by_name("bn").get()), nullptr);
    EXPECT_NE(dynamic_cast<BatchNormLayer*>(net->layer_by_name("bn").get()), nullptr);
  }
}

TEST(DnnlEngineSelectionTest, ContextDefaultEngineOverridesTheMeasuredChoice) {
  const LayerParameter ip = ParseLayer(InnerProduct("num_output: 2"));
  const LayerParameter conv = ParseLayer(Conv("num_output: 2 kernel_size: 3"));
  const LayerParameter bn = ParseLayer(BatchNorm(""));
  {
    // The measured choice: oneDNN for convolution, the reference loops for batch norm,
    // OpenBLAS GEMM for inner products.
    const Context measured = ContextWithDefault(DefaultEngine::MEASURED);
    EXPECT_NE(dynamic_cast<DnnlConvolutionLayer*>(LayerRegistry::CreateLayer(conv, measured).get()),
              nullptr);
    EXPECT_EQ(dynamic_cast<DnnlBatchNormLayer*>(LayerRegistry::CreateLayer(bn, measured).get()),
              nullptr);
    EXPECT_EQ(dynamic_cast<DnnlInnerProductLayer*>(LayerRegistry::CreateLayer(ip, measured).get()),
              nullptr);
  }
  {
    const Context caffe = ContextWithDefault(DefaultEngine::CAFFE);
    EXPECT_EQ(dynamic_cast<DnnlInnerProductLayer*>(LayerRegistry::CreateLayer(ip, caffe).get()),
              nullptr);
    EXPECT_EQ(dynamic_cast<DnnlConvolutionLayer*>(LayerRegistry::CreateLayer(conv, caffe).get()),
              nullptr);
    auto reference_bn = LayerRegistry::CreateLayer(bn, caffe);
    EXPECT_EQ(dynamic_cast<DnnlBatchNormLayer*>(reference_bn.get()), nullptr);
    EXPECT_NE(dynamic_cast<BatchNormLayer*>(reference_bn.get()), nullptr);
    // An explicit engine still wins.
    const LayerParameter explicit_dnnl =
        ParseLayer(Conv("num_output: 2 kernel_size: 3 engine: DNNL"));
    EXPECT_NE(dynamic_cast<DnnlConvolutionLayer*>(
                  LayerRegistry::CreateLayer(explicit_dnnl, caffe).get()),
              nullptr);
  }
  {
    const Context dnnl = ContextWithDefault(DefaultEngine::DNNL);
    EXPECT_NE(dynamic_cast<DnnlInnerProductLayer*>(LayerRegistry::CreateLayer(ip, dnnl).get()),
              nullptr);
    EXPECT_NE(dynamic_cast<DnnlBatchNormLayer*>(LayerRegistry::CreateLayer(bn, dnnl).get()),
              nullptr);
  }
  {
    // A net takes the choice from the context it is built in.
    NetParameter param;
    *param.add_layer() = ParseLayer(
        "name: 'data' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 6 dim: 6 } }");
    LayerParameter conv_in_net = conv;
    conv_in_net.add_bottom("x");
    conv_in_net.add_top("y");
    *param.add_layer() = conv_in_net;
    auto context = std::make_shared<Context>(ContextWithDefault(DefaultEngine::CAFFE));
    Net net(param, context);
    EXPECT_EQ(dynamic_cast<DnnlConvolutionLayer*>(net.layers()[1].get()), nullptr);
  }
}

#else  // !USE_DNNL

TEST(DnnlLayersTest, NeedsDnnl) { GTEST_SKIP() << "built without oneDNN (USE_DNNL off)"; }

TEST(DnnlEngineSelectionTest, DnnlWithoutOneDnnIsAnError) {
  try {
    LayerRegistry::CreateLayer(ParseLayer(
        "name: 'conv1' type: 'Convolution' convolution_param { num_output: 2 kernel_size: 3 "
        "engine: DNNL }"));
    FAIL() << "expected caffe::Error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("conv1"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("DNNL"), string::npos) << e.what();
  }
  // DEFAULT and CAFFE still give the reference layer.
  auto layer = LayerRegistry::CreateLayer(ParseLayer(
      "name: 'conv1' type: 'Convolution' convolution_param { num_output: 2 kernel_size: 3 }"));
  EXPECT_NE(dynamic_cast<ConvolutionLayer*>(layer.get()), nullptr);
}

#endif  // USE_DNNL

}  // namespace
}  // namespace caffe
