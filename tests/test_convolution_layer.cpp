// Convolution: literal small cases, a naive n-d reference loop (groups, dilation,
// stride, padding, 1x1, 3-d), several bottoms sharing weights, gradient checks, and
// the errors a user can trigger with bad parameters or shapes.
#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Row-major coordinates of flat index `index` in `dims`.
vector<int64_t> Unflatten(int64_t index, const vector<int64_t>& dims) {
  vector<int64_t> coords(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    coords[i] = index % dims[i];
    index /= dims[i];
  }
  return coords;
}

int64_t Product(const vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// Direct definition of grouped, dilated, strided, padded n-d convolution:
// y[n, o, q] = b[o] + sum_{ci, k} w[o, ci, k] * x[n, g*C/G + ci, q*s - p + k*d].
void NaiveConvolution(const Blob& x, const Blob& w, const Blob* bias, const vector<int>& stride,
                      const vector<int>& pad, const vector<int>& dilation, int group, Blob* y) {
  const int spatial = static_cast<int>(stride.size());
  const int64_t N = x.shape(0), C = x.shape(1), O = w.shape(0);
  const vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  const vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  vector<int64_t> out(spatial);
  for (int i = 0; i < spatial; ++i) {
    out[i] = (in[i] + 2 * pad[i] - (dilation[i] * (kernel[i] - 1) + 1)) / stride[i] + 1;
  }
  vector<int64_t> y_shape{N, O};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  y->Reshape(y_shape);
  const int64_t in_plane = Product(in), out_plane = Product(out), k_plane = Product(kernel);
  const int64_t c_per_group = C / group, o_per_group = O / group;
  float* yd = y->mutable_cpu_data();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t q = 0; q < out_plane; ++q) {
        const vector<int64_t> oc = Unflatten(q, out);
        double acc = bias ? bias->cpu_data()[o] : 0.0;
        for (int64_t ci = 0; ci < c_per_group; ++ci) {
          const int64_t c = (o / o_per_group) * c_per_group + ci;
          for (int64_t kp = 0; kp < k_plane; ++kp) {
            const vector<int64_t> kc = Unflatten(kp, kernel);
            int64_t flat = 0;
            bool inside = true;
            for (int i = 0; i < spatial; ++i) {
              const int64_t z = oc[i] * stride[i] - pad[i] + kc[i] * dilation[i];
              inside &= z >= 0 && z < in[i];
              flat = flat * in[i] + z;
            }
            if (!inside) continue;
            acc += double(w.cpu_data()[(o * c_per_group + ci) * k_plane + kp]) *
                   x.cpu_data()[(n * C + c) * in_plane + flat];
          }
        }
        yd[(n * O + o) * out_plane + q] = static_cast<float>(acc);
      }
}

LayerParameter ConvParam(const std::string& conv_fields) {
  return ParseLayer("name: 'conv' type: 'Convolution' convolution_param { " + conv_fields +
                    " weight_filler { type: 'gaussian' std: 0.5 } "
                    "bias_filler { type: 'uniform' min: -1 max: 1 } }");
}

void ExpectBlobsNear(const Blob& a, const Blob& b, float tol = 1e-4f) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.count(); ++i) {
    ASSERT_NEAR(a.cpu_data()[i], b.cpu_data()[i], tol) << "element " << i;
  }
}

// Runs the layer and the naive loop on `bottom_shape` and compares.
void CheckAgainstNaive(const std::string& conv_fields, const vector<int64_t>& bottom_shape,
                       const vector<int>& stride, const vector<int>& pad,
                       const vector<int>& dilation, int group) {
  SCOPED_TRACE(conv_fields);
  Blob bottom(bottom_shape), top, expected;
  FillUniform(&bottom, -1, 1);
  ConvolutionLayer layer(ConvParam(conv_fields));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  const Blob* bias = layer.blobs().size() > 1 ? layer.blobs()[1].get() : nullptr;
  NaiveConvolution(bottom, *layer.blobs()[0], bias, stride, pad, dilation, group, &expected);
  ExpectBlobsNear(top, expected);
}

TEST(ConvolutionLayerTest, HandComputedTwoFilters) {
  Blob bottom({1, 1, 3, 3}), top;
  for (int i = 0; i < 9; ++i) bottom.mutable_cpu_data()[i] = i + 1;  // 1..9
  ConvolutionLayer layer(ConvParam("num_output: 2 kernel_size: 2"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{2, 1, 2, 2}));
  // Filter 0 is x[i][j] - x[i+1][j+1] (always 1 - 5 = -4), filter 1 sums the patch.
  const float w[] = {1, 0, 0, -1, 1, 1, 1, 1};
  std::copy(w, w + 8, layer.blobs()[0]->mutable_cpu_data());
  layer.blobs()[1]->mutable_cpu_data()[0] = 1;
  layer.blobs()[1]->mutable_cpu_data()[1] = 0.5f;
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 2, 2, 2}));
  const float expected[] = {-3, -3, -3, -3, 12.5f, 16.5f, 24.5f, 28.5f};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]) << i;
}

TEST(ConvolutionLayerTest, StrideAndPadHandComputed) {
  // 1x1x4x4 of ones, 3x3 all-ones kernel, pad 1, stride 2: out = (4+2-3)/2+1 = 2;
  // windows start at -1 and 1: the corner window sees 2x2 ones, the others 2x3 / 3x3.
  Blob bottom({1, 1, 4, 4}), top;
  std::fill_n(bottom.mutable_cpu_data(), 16, 1.f);
  ConvolutionLayer layer(ParseLayer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 3 "
      "pad: 1 stride: 2 bias_term: false weight_filler { type: 'constant' value: 1 } }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  EXPECT_EQ(layer.blobs().size(), 1u);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 2, 2}));
  EXPECT_FLOAT_EQ(top.cpu_data()[0], 4);
  EXPECT_FLOAT_EQ(top.cpu_data()[1], 6);
  EXPECT_FLOAT_EQ(top.cpu_data()[2], 6);
  EXPECT_FLOAT_EQ(top.cpu_data()[3], 9);
}

TEST(ConvolutionLayerTest, DilationHandComputed) {
  // 2x2 kernel dilated by 2 reads x[i][j], x[i][j+2], x[i+2][j], x[i+2][j+2].
  Blob bottom({1, 1, 5, 5}), top;
  for (int i = 0; i < 25; ++i) bottom.mutable_cpu_data()[i] = i;
  ConvolutionLayer layer(ParseLayer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 2 "
      "dilation: 2 bias_term: false weight_filler { type: 'constant' value: 1 } }"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 3, 3}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const float x00 = i * 5 + j;
      EXPECT_FLOAT_EQ(top.cpu_data()[i * 3 + j], x00 + (x00 + 2) + (x00 + 10) + (x00 + 12));
    }
}

TEST(ConvolutionLayerTest, GroupsKeepChannelsApart) {
  // group 2, 1x1 kernel: output 0 only sees input channel 0, output 1 only channel 1.
  Blob bottom({1, 2, 2, 2}), top;
  const float x[] = {1, 2, 3, 4, 10, 20, 30, 40};
  std::copy(x, x + 8, bottom.mutable_cpu_data());
  ConvolutionLayer layer(ConvParam("num_output: 2 kernel_size: 1 group: 2 bias_term: false"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  ASSERT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{2, 1, 1, 1}));
  layer.blobs()[0]->mutable_cpu_data()[0] = 2;
  layer.blobs()[0]->mutable_cpu_data()[1] = -1;
  layer.Forward(bottoms, tops);
  const float expected[] = {2, 4, 6, 8, -10, -20, -30, -40};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]) << i;
}

TEST(ConvolutionLayerTest, MatchesNaiveLoop) {
  CheckAgainstNaive("num_output: 3 kernel_size: 3", {2, 2, 5, 6}, {1, 1}, {0, 0}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 4 kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 6}, {2, 2},
                    {1, 1}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 6 kernel_size: 3 group: 2 pad: 1", {2, 4, 5, 5}, {1, 1},
                    {1, 1}, {1, 1}, 2);
  CheckAgainstNaive("num_output: 3 kernel_size: 3 dilation: 2 pad: 2", {1, 3, 7, 7}, {1, 1},
                    {2, 2}, {2, 2}, 1);
  CheckAgainstNaive("num_output: 4 kernel_size: 3 dilation: 2 dilation: 1 stride: 2 group: 2",
                    {2, 2, 8, 7}, {2, 2}, {0, 0}, {2, 1}, 2);
  CheckAgainstNaive(
      "num_output: 2 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 2 stride_w: 1",
      {1, 2, 6, 5}, {2, 1}, {1, 0}, {1, 1}, 1);
  // 1x1 takes the path without im2col, with and without groups.
  CheckAgainstNaive("num_output: 5 kernel_size: 1", {2, 3, 4, 3}, {1, 1}, {0, 0}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 4 kernel_size: 1 group: 2", {2, 6, 3, 3}, {1, 1}, {0, 0},
                    {1, 1}, 2);
  // A 1x1 kernel with stride is not the fast path.
  CheckAgainstNaive("num_output: 2 kernel_size: 1 stride: 2", {1, 3, 5, 5}, {2, 2}, {0, 0},
                    {1, 1}, 1);
}

TEST(ConvolutionLayerTest, ForceNdMatchesTwoDimPath) {
  CheckAgainstNaive("num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 "
                    "force_nd_im2col: true",
                    {2, 4, 6, 5}, {2, 2}, {1, 1}, {1, 1}, 2);
}

TEST(ConvolutionLayerTest, ThreeDimMatchesNaiveLoop) {
  CheckAgainstNaive("num_output: 3 kernel_size: 3 kernel_size: 2 kernel_size: 2 "
                    "stride: 1 stride: 2 stride: 1 pad: 1 pad: 0 pad: 1 dilation: 1 "
                    "dilation: 1 dilation: 2",
                    {2, 2, 4, 5, 5}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1);
  CheckAgainstNaive("num_output: 4 kernel_size: 2 group: 2", {1, 4, 3, 4, 3}, {1, 1, 1},
                    {0, 0, 0}, {1, 1, 1}, 2);
  // 1-d (N x C x L) works through the n-d path as well.
  CheckAgainstNaive("num_output: 2 kernel_size: 3 pad: 1 stride: 2", {2, 3, 9}, {2}, {1},
                    {1}, 1);
}

TEST(ConvolutionLayerTest, AxisSelectsTheChannelAxis) {
  // axis: 2 on a 5-d blob treats the first two axes as batch and the last two as H, W.
  Blob bottom({2, 3, 2, 5, 4}), flat({6, 2, 5, 4}), top, expected;
  FillUniform(&bottom, -1, 1);
  flat.CopyFrom(bottom, false, true);
  flat.Reshape({6, 2, 5, 4});
  ConvolutionLayer layer(ConvParam("num_output: 3 kernel_size: 2 axis: 2"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{2, 3, 3, 4, 3}));
  NaiveConvolution(flat, *layer.blobs()[0], layer.blobs()[1].get(), {1, 1}, {0, 0}, {1, 1}, 1,
                   &expected);
  for (int64_t i = 0; i < top.count(); ++i) {
    ASSERT_NEAR(top.cpu_data()[i], expected.cpu_data()[i], 1e-4) << i;
  }
}

TEST(ConvolutionLayerTest, MultipleBottomsShareWeights) {
  Blob a({2, 3, 5, 5}), b({2, 3, 5, 5}), top_a, top_b, expected;
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  ConvolutionLayer layer(ConvParam("num_output: 4 kernel_size: 3 pad: 1"));
  vector<Blob*> bottoms{&a, &b}, tops{&top_a, &top_b};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  NaiveConvolution(a, *layer.blobs()[0], layer.blobs()[1].get(), {1, 1}, {1, 1}, {1, 1}, 1,
                   &expected);
  ExpectBlobsNear(top_a, expected);
  NaiveConvolution(b, *layer.blobs()[0], layer.blobs()[1].get(), {1, 1}, {1, 1}, {1, 1}, 1,
                   &expected);
  ExpectBlobsNear(top_b, expected);
}

TEST(ConvolutionLayerTest, WeightGradientsAccumulate) {
  Blob bottom({2, 2, 4, 4}), top;
  FillUniform(&bottom, -1, 1);
  ConvolutionLayer layer(ConvParam("num_output: 3 kernel_size: 3 pad: 1"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  FillUniform(&top, -1, 1, 5);
  std::copy(top.cpu_data(), top.cpu_data() + top.count(), top.mutable_cpu_diff());
  for (auto& blob : layer.blobs()) std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.f);
  layer.Backward(tops, {true}, bottoms);
  const vector<float> once(layer.blobs()[0]->cpu_diff(),
                           layer.blobs()[0]->cpu_diff() + layer.blobs()[0]->count());
  const float bias_once = layer.blobs()[1]->cpu_diff()[0];
  const vector<float> dx_once(bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
  layer.Backward(tops, {true}, bottoms);
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_NEAR(layer.blobs()[0]->cpu_diff()[i], 2 * once[i], 1e-4);
  }
  EXPECT_NEAR(layer.blobs()[1]->cpu_diff()[0], 2 * bias_once, 1e-4);
  // The bottom diff is overwritten, not accumulated.
  for (size_t i = 0; i < dx_once.size(); ++i) EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], dx_once[i]);
}

// The reference engine's im2col columns live in one buffer per thread, shared by every
// layer: interleaving the passes of layers of different sizes (a convolution, a larger
// one, a deconvolution that reuses its columns between its weight and data gradients)
// must give each layer bitwise what it gives alone.
TEST(ConvolutionLayerTest, SharedColumnsLeaveEachLayersResultsAlone) {
  const vector<LayerParameter> params{
      ConvParam("num_output: 3 kernel_size: 3 pad: 1 engine: CAFFE"),
      ConvParam("num_output: 4 kernel_size: 5 stride: 1 pad: 2 group: 2 engine: CAFFE"),
      ParseLayer("name: 'deconv' type: 'Deconvolution' convolution_param { num_output: 2 "
                 "kernel_size: 3 stride: 2 engine: CAFFE "
                 "weight_filler { type: 'gaussian' std: 0.5 } }")};
  const vector<vector<int64_t>> shapes{{2, 2, 6, 6}, {2, 4, 11, 9}, {2, 3, 5, 4}};
  struct Run {
    shared_ptr<Layer> layer;
    Blob bottom, top;
  };
  auto make = [&](size_t i, Run* run) {
    run->layer = LayerRegistry::CreateLayer(params[i], Context());
    ASSERT_EQ(string(typeid(*run->layer).name()).find("Dnnl"), string::npos);
    run->bottom.Reshape(shapes[i]);
    FillUniform(&run->bottom, -1, 1, 10 + i);
    vector<Blob*> bottoms{&run->bottom}, tops{&run->top};
    run->layer->SetUp(bottoms, tops);
  };
  auto forward = [](Run* run) {
    vector<Blob*> bottoms{&run->bottom}, tops{&run->top};
    run->layer->Forward(bottoms, tops);
  };
  auto backward = [](Run* run) {
    vector<Blob*> bottoms{&run->bottom}, tops{&run->top};
    std::copy(run->top.cpu_data(), run->top.cpu_data() + run->top.count(),
              run->top.mutable_cpu_diff());
    run->layer->Backward(tops, {true}, bottoms);
  };
  auto results = [](const Run& run) {
    vector<float> out(run.top.cpu_data(), run.top.cpu_data() + run.top.count());
    out.insert(out.end(), run.bottom.cpu_diff(), run.bottom.cpu_diff() + run.bottom.count());
    for (const auto& blob : run.layer->blobs()) {
      out.insert(out.end(), blob->cpu_diff(), blob->cpu_diff() + blob->count());
    }
    return out;
  };
  vector<vector<float>> alone;
  for (size_t i = 0; i < params.size(); ++i) {
    Run run;
    make(i, &run);
    forward(&run);
    backward(&run);
    alone.push_back(results(run));
  }
  vector<Run> runs(params.size());
  for (size_t i = 0; i < params.size(); ++i) make(i, &runs[i]);
  for (auto& run : runs) forward(&run);
  for (size_t i = runs.size(); i-- > 0;) backward(&runs[i]);
  for (size_t i = 0; i < runs.size(); ++i) {
    const vector<float> together = results(runs[i]);
    ASSERT_EQ(together.size(), alone[i].size());
    for (size_t j = 0; j < together.size(); ++j) ASSERT_EQ(together[j], alone[i][j]) << "layer " << i << ", value " << j;
  }
}

TEST(ConvolutionLayerTest, InlineWeightsAreKept) {
  LayerParameter param = ParseLayer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 1 "
      "bias_term: false } blobs { shape { dim: 1 dim: 1 dim: 1 dim: 1 } data: 3 }");
  Blob bottom({1, 1, 2, 2}), top;
  std::fill_n(bottom.mutable_cpu_data(), 4, 2.f);
  ConvolutionLayer layer(param);
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], 6);
}

TEST(ConvolutionLayerTest, RegisteredAsConvolution) {
  auto layer = LayerRegistry::CreateLayer(ConvParam("num_output: 2 kernel_size: 3"));
  EXPECT_STREQ(layer->type(), "Convolution");
}

void CheckConvGradient(const std::string& conv_fields, const vector<int64_t>& shape,
                       int num_bottoms = 1) {
  SCOPED_TRACE(conv_fields);
  vector<std::unique_ptr<Blob>> storage;
  vector<Blob*> bottoms, tops;
  for (int i = 0; i < num_bottoms; ++i) {
    storage.push_back(std::make_unique<Blob>(shape));
    FillUniform(storage.back().get(), -1, 1, 10 + i);
    bottoms.push_back(storage.back().get());
    storage.push_back(std::make_unique<Blob>());
    tops.push_back(storage.back().get());
  }
  ConvolutionLayer layer(ConvParam(conv_fields));
  GradientChecker checker(1e-2f, 5e-3f);
  checker.CheckGradient(&layer, bottoms, tops);
  int64_t expected = 0;
  for (auto& blob : layer.blobs()) expected += blob->count();
  for (Blob* b : bottoms) expected += b->count();
  EXPECT_EQ(checker.checked(), expected);
}

TEST(ConvolutionLayerTest, Gradient) {
  CheckConvGradient("num_output: 3 kernel_size: 3 stride: 2 pad: 1", {2, 2, 5, 5});
}

TEST(ConvolutionLayerTest, GradientGroup) {
  CheckConvGradient("num_output: 4 kernel_size: 2 group: 2", {2, 4, 4, 3});
}

TEST(ConvolutionLayerTest, GradientDilation) {
  CheckConvGradient("num_output: 2 kernel_size: 3 dilation: 2 pad: 1", {1, 2, 6, 6});
}

TEST(ConvolutionLayerTest, Gradient1x1AndNoBias) {
  CheckConvGradient("num_output: 3 kernel_size: 1 group: 1 bias_term: false", {2, 2, 3, 3});
}

TEST(ConvolutionLayerTest, GradientThreeDim) {
  CheckConvGradient("num_output: 2 kernel_size: 2 pad: 1 stride: 2", {1, 2, 3, 4, 3});
}

TEST(ConvolutionLayerTest, GradientMultipleBottoms) {
  CheckConvGradient("num_output: 2 kernel_size: 2", {2, 2, 3, 3}, 2);
}

// Expects SetUp to throw a caffe::Error naming the layer and containing `fragment`.
void ExpectSetUpError(const LayerParameter& param, vector<Blob*> bottoms,
                      const std::string& fragment) {
  vector<Blob> tops(bottoms.size());
  vector<Blob*> top_ptrs;
  for (Blob& t : tops) top_ptrs.push_back(&t);
  ConvolutionLayer layer(param);
  try {
    layer.SetUp(bottoms, top_ptrs);
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'conv'"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(ConvolutionLayerTest, Errors) {
  Blob wide({1, 64, 3, 3}), small({1, 2, 5, 5}), other({1, 2, 4, 5}), cube({1, 2, 3, 3, 3});
  ExpectSetUpError(ConvParam("num_output: 6 kernel_size: 1 group: 3"), {&wide},
                   "group 3 does not divide 64 input channels");
  ExpectSetUpError(ConvParam("num_output: 3 kernel_size: 1 group: 2"), {&small},
                   "group 2 does not divide num_output 3");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 7"), {&small},
                   "kernel 7 exceeds padded input 5 on axis 2");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 3 dilation: 4 pad: 1"), {&small},
                   "exceeds padded input 7 on axis 2");
  ExpectSetUpError(ConvParam("num_output: 2"), {&small}, "kernel size must be positive");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 0"), {&small},
                   "kernel size must be positive");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 3 stride: 0"), {&small},
                   "stride must be positive");
  ExpectSetUpError(ConvParam("kernel_size: 3"), {&small}, "num_output must be positive");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 3"), {&small, &other},
                   "all bottoms must have the same shape");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 1 kernel_size: 2"), {&cube},
                   "must be given 0, 1 or 3 times");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_h: 1 kernel_w: 1"), {&cube},
                   "need 2 spatial axes");
  ExpectSetUpError(ConvParam("num_output: 2 kernel_size: 2 kernel_h: 1 kernel_w: 1"),
                   {&small}, "alternatives");
}

TEST(ConvolutionLayerTest, ChannelChangeAfterSetUpIsAnError) {
  Blob bottom({1, 2, 5, 5}), top;
  ConvolutionLayer layer(ConvParam("num_output: 2 kernel_size: 3"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  bottom.Reshape({1, 3, 5, 5});
  EXPECT_THROW(layer.Forward(bottoms, tops), Error);
  // A new spatial size is fine: only the weights' shape is fixed.
  bottom.Reshape({1, 2, 7, 6});
  layer.Forward(bottoms, tops);
  EXPECT_EQ(top.shape(), (vector<int64_t>{1, 2, 5, 4}));
}

}  // namespace
}  // namespace caffe
