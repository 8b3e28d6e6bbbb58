// Deconvolution: output shapes, a naive scatter loop (groups, stride, pad, dilation,
// 3-d), the adjoint relation with Convolution, gradient checks and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

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

// Every input x[n, c, q] spreads w[c, oi, k] * x into y[n, g*O/G + oi, q*s - p + k*d].
void NaiveDeconvolution(const Blob& x, const Blob& w, const Blob* bias,
                        const vector<int>& stride, const vector<int>& pad,
                        const vector<int>& dilation, int group, Blob* y) {
  const int spatial = static_cast<int>(stride.size());
  const int64_t N = x.shape(0), C = x.shape(1);
  const int64_t o_per_group = w.shape(1), O = o_per_group * group, c_per_group = C / group;
  const vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  const vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  vector<int64_t> out(spatial);
  for (int i = 0; i < spatial; ++i) {
    out[i] = (in[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - 2 * pad[i];
  }
  vector<int64_t> y_shape{N, O};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  y->Reshape(y_shape);
  const int64_t in_plane = Product(in), out_plane = Product(out), k_plane = Product(kernel);
  vector<double> acc(y->count(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t q = 0; q < in_plane; ++q) {
        const vector<int64_t> ic = Unflatten(q, in);
        const float xv = x.cpu_data()[(n * C + c) * in_plane + q];
        for (int64_t oi = 0; oi < o_per_group; ++oi) {
          const int64_t o = (c / c_per_group) * o_per_group + oi;
          for (int64_t kp = 0; kp < k_plane; ++kp) {
            const vector<int64_t> kc = Unflatten(kp, kernel);
            int64_t flat = 0;
            bool inside = true;
            for (int i = 0; i < spatial; ++i) {
              const int64_t z = ic[i] * stride[i] - pad[i] + kc[i] * dilation[i];
              inside &= z >= 0 && z < out[i];
              flat = flat * out[i] + z;
            }
            if (!inside) continue;
            acc[(n * O + o) * out_plane + flat] +=
                double(w.cpu_data()[(c * o_per_group + oi) * k_plane + kp]) * xv;
          }
        }
      }
  float* yd = y->mutable_cpu_data();
  for (int64_t i = 0; i < y->count(); ++i) {
    const int64_t o = (i / out_plane) % O;
    yd[i] = static_cast<float>(acc[i] + (bias ? bias->cpu_data()[o] : 0.f));
  }
}

LayerParameter DeconvParam(const std::string& conv_fields) {
  return ParseLayer("name: 'deconv' type: 'Deconvolution' convolution_param { " + conv_fields +
                    " weight_filler { type: 'gaussian' std: 0.5 } "
                    "bias_filler { type: 'uniform' min: -1 max: 1 } }");
}

void CheckAgainstNaive(const std::string& conv_fields, const vector<int64_t>& bottom_shape,
                       const vector<int>& stride, const vector<int>& pad,
                       const vector<int>& dilation, int group) {
  SCOPED_TRACE(conv_fields);
  Blob bottom(bottom_shape), top, expected;
  FillUniform(&bottom, -1, 1);
  DeconvolutionLayer layer(DeconvParam(conv_fields));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  const Blob* bias = layer.blobs().size() > 1 ? layer.blobs()[1].get() : nullptr;
  NaiveDeconvolution(bottom, *layer.blobs()[0], bias, stride, pad, dilation, group, &expected);
  ASSERT_EQ(top.shape(), expected.shape());
  for (int64_t i = 0; i < top.count(); ++i) {
    ASSERT_NEAR(top.cpu_data()[i], expected.cpu_data()[i], 1e-4) << "element " << i;
  }
}

TEST(DeconvolutionLayerTest, OutputShapeAndWeightShape) {
  Blob bottom({2, 4, 3, 5}), top;
  DeconvolutionLayer layer(DeconvParam("num_output: 6 kernel_size: 3 stride: 2 pad: 1 group: 2"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  // (in - 1) * 2 + 3 - 2: 3 -> 5, 5 -> 9.
  EXPECT_EQ(top.shape(), (vector<int64_t>{2, 6, 5, 9}));
  EXPECT_EQ(layer.blobs()[0]->shape(), (vector<int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(layer.blobs()[1]->shape(), (vector<int64_t>{6}));

  Blob dilated_top;
  vector<Blob*> dilated_tops{&dilated_top};
  DeconvolutionLayer dilated(DeconvParam("num_output: 1 kernel_size: 3 dilation: 2"));
  dilated.SetUp(bottoms, dilated_tops);
  // (in - 1) + 2 * 2 + 1: 3 -> 7, 5 -> 9.
  EXPECT_EQ(dilated_top.shape(), (vector<int64_t>{2, 1, 7, 9}));
}

TEST(DeconvolutionLayerTest, HandComputedUpsampling) {
  // A 2x2 kernel with stride 2 pastes a scaled copy of the kernel per input pixel.
  Blob bottom({1, 1, 2, 2}), top;
  const float x[] = {1, 2, 3, 4};
  std::copy(x, x + 4, bottom.mutable_cpu_data());
  DeconvolutionLayer layer(DeconvParam("num_output: 1 kernel_size: 2 stride: 2"));
  vector<Blob*> bottoms{&bottom}, tops{&top};
  layer.SetUp(bottoms, tops);
  const float w[] = {1, 10, 100, 1000};
  std::copy(w, w + 4, layer.blobs()[0]->mutable_cpu_data());
  layer.blobs()[1]->mutable_cpu_data()[0] = 0.5f;
  layer.Forward(bottoms, tops);
  ASSERT_EQ(top.shape(), (vector<int64_t>{1, 1, 4, 4}));
  const float expected[] = {1,   10,   2,   20,   100, 1000, 200, 2000,
                            3,   30,   4,   40,   300, 3000, 400, 4000};
  for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i] + 0.5f) << i;
}

TEST(DeconvolutionLayerTest, MatchesNaiveLoop) {
  CheckAgainstNaive("num_output: 3 kernel_size: 3", {2, 2, 3, 4}, {1, 1}, {0, 0}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 2 kernel_size: 3 stride: 2 pad: 1", {2, 3, 3, 3}, {2, 2},
                    {1, 1}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 4 kernel_size: 2 stride: 2 group: 2", {1, 6, 3, 2}, {2, 2},
                    {0, 0}, {1, 1}, 2);
  CheckAgainstNaive("num_output: 2 kernel_size: 3 dilation: 2 pad: 1", {1, 2, 4, 4}, {1, 1},
                    {1, 1}, {2, 2}, 1);
  CheckAgainstNaive("num_output: 3 kernel_size: 1", {2, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 2 kernel_size: 2 stride: 2 pad: 1 force_nd_im2col: true",
                    {1, 2, 3, 4}, {2, 2}, {1, 1}, {1, 1}, 1);
  CheckAgainstNaive("num_output: 2 kernel_size: 2 kernel_size: 3 kernel_size: 2 stride: 2",
                    {1, 2, 2, 3, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, 1);
}

TEST(DeconvolutionLayerTest, IsTheTransposeOfConvolution) {
  // Same weights and geometry, no bias: <conv(x), y> == <x, deconv(y)>.
  const std::string fields =
      "num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 bias_term: false ";
  Blob x({2, 6, 7, 5}), conv_top, y, deconv_top;
  FillUniform(&x, -1, 1, 3);
  ConvolutionLayer conv(ParseLayer("name: 'c' type: 'Convolution' convolution_param { " +
                                   fields + "weight_filler { type: 'gaussian' std: 1 } }"));
  vector<Blob*> conv_bottoms{&x}, conv_tops{&conv_top};
  conv.SetUp(conv_bottoms, conv_tops);
  conv.Forward(conv_bottoms, conv_tops);

  y.ReshapeLike(conv_top);
  FillUniform(&y, -1, 1, 4);
  // The deconvolution maps 4 channels back to 6: its weights are (4, 6/2, 3, 3), the
  // same memory layout as the convolution's (num_output 4, 6/2, 3, 3).
  DeconvolutionLayer deconv(
      ParseLayer("name: 'd' type: 'Deconvolution' convolution_param { num_output: 6 "
                 "kernel_size: 3 stride: 2 pad: 1 group: 2 bias_term: false }"));
  vector<Blob*> deconv_bottoms{&y}, deconv_tops{&deconv_top};
  deconv.SetUp(deconv_bottoms, deconv_tops);
  ASSERT_EQ(deconv.blobs()[0]->shape(), conv.blobs()[0]->shape());
  deconv.blobs()[0]->CopyFrom(*conv.blobs()[0]);
  deconv.Forward(deconv_bottoms, deconv_tops);
  // 7 -> 4 -> 7 and 5 -> 3 -> 5 with this geometry, so the shapes line up.
  ASSERT_EQ(deconv_top.shape(), x.shape());

  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < y.count(); ++i) lhs += double(conv_top.cpu_data()[i]) * y.cpu_data()[i];
  for (int64_t i = 0; i < x.count(); ++i) rhs += double(x.cpu_data()[i]) * deconv_top.cpu_data()[i];
  EXPECT_NEAR(lhs, rhs, 1e-3 * std::max(1.0, std::fabs(lhs)));
}

void CheckDeconvGradient(const std::string& conv_fields, const vector<int64_t>& shape,
                         int num_bottoms = 1) {
  SCOPED_TRACE(conv_fields);
  vector<std::unique_ptr<Blob>> storage;
  vector<Blob*> bottoms, tops;
  for (int i = 0; i < num_bottoms; ++i) {
    storage.push_back(std::make_unique<Blob>(shape));
    FillUniform(storage.back().get(), -1, 1, 20 + i);
    bottoms.push_back(storage.back().get());
    storage.push_back(std::make_unique<Blob>());
    tops.push_back(storage.back().get());
  }
  DeconvolutionLayer layer(DeconvParam(conv_fields));
  GradientChecker checker(1e-2f, 5e-3f);
  checker.CheckGradient(&layer, bottoms, tops);
  int64_t expected = 0;
  for (auto& blob : layer.blobs()) expected += blob->count();
  for (Blob* b : bottoms) expected += b->count();
  EXPECT_EQ(checker.checked(), expected);
}

TEST(DeconvolutionLayerTest, Gradient) {
  CheckDeconvGradient("num_output: 3 kernel_size: 3 stride: 2 pad: 1", {2, 2, 3, 3});
}

TEST(DeconvolutionLayerTest, GradientGroupAndDilation) {
  CheckDeconvGradient("num_output: 4 kernel_size: 2 group: 2 dilation: 2", {1, 4, 3, 3});
}

TEST(DeconvolutionLayerTest, Gradient1x1MultipleBottoms) {
  CheckDeconvGradient("num_output: 2 kernel_size: 1", {2, 3, 2, 2}, 2);
}

TEST(DeconvolutionLayerTest, GradientThreeDim) {
  CheckDeconvGradient("num_output: 2 kernel_size: 2 stride: 2 bias_term: false",
                      {1, 2, 2, 2, 2});
}

TEST(DeconvolutionLayerTest, BottomGradientWithoutWeightGradient) {
  // With frozen weights the data pass must do its own im2col of the top diff instead
  // of reusing the column buffer the weight pass would have filled.
  const LayerParameter param = DeconvParam("num_output: 3 kernel_size: 3 stride: 2 pad: 1");
  Blob bottom({2, 2, 3, 3}), top_a, top_b;
  FillUniform(&bottom, -1, 1);
  DeconvolutionLayer a(param), b(param);
  vector<Blob*> bottoms{&bottom}, tops_a{&top_a}, tops_b{&top_b};
  a.SetUp(bottoms, tops_a);
  b.SetUp(bottoms, tops_b);
  b.blobs()[0]->CopyFrom(*a.blobs()[0]);
  b.blobs()[1]->CopyFrom(*a.blobs()[1]);
  b.set_param_propagate_down(0, false);
  b.set_param_propagate_down(1, false);
  a.Forward(bottoms, tops_a);
  FillUniform(&top_a, -1, 1, 9);
  std::copy(top_a.cpu_data(), top_a.cpu_data() + top_a.count(), top_a.mutable_cpu_diff());
  a.Backward(tops_a, {true}, bottoms);
  const vector<float> expected(bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
  b.Forward(bottoms, tops_b);
  std::copy(top_a.cpu_diff(), top_a.cpu_diff() + top_a.count(), top_b.mutable_cpu_diff());
  b.Backward(tops_b, {true}, bottoms);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(bottom.cpu_diff()[i], expected[i], 1e-5) << i;
  }
}

TEST(DeconvolutionLayerTest, Errors) {
  Blob bottom({1, 4, 1, 3}), top;
  vector<Blob*> bottoms{&bottom}, tops{&top};
  {
    // (1 - 1) * 1 + 1 - 2 * 1 = -1 rows.
    DeconvolutionLayer layer(DeconvParam("num_output: 2 kernel_size: 1 pad: 1"));
    try {
      layer.SetUp(bottoms, tops);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer 'deconv' (Deconvolution)"), std::string::npos) << what;
      EXPECT_NE(what.find("leaves no output on axis 2"), std::string::npos) << what;
    }
  }
  {
    DeconvolutionLayer layer(DeconvParam("num_output: 3 kernel_size: 2 group: 2"));
    EXPECT_THROW(layer.SetUp(bottoms, tops), Error);  // group does not divide num_output
  }
}

}  // namespace
}  // namespace caffe
