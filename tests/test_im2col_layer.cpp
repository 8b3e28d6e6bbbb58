// The Im2col layer: literal columns, a naive reference over padded, strided, dilated and
// rectangular geometries, the summed gradient (col2im), and parameter errors.
#include <gtest/gtest.h>

#include <string>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/im2col_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

LayerParameter Im2colParam(const std::string& conv_fields) {
  return ParseLayer(
      "name: 'cols' type: 'Im2col' bottom: 'image' top: 'columns' "
      "convolution_param { " +
      conv_fields + " }");
}

void FillCounting(Blob* blob) {
  for (int64_t i = 0; i < blob->count(); ++i) blob->mutable_cpu_data()[i] = float(i + 1);
}

struct Geometry {
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
};

// Each column entry read straight from the definition: channel (c kh + i) kw + j at
// output (y, x) is input channel c at row y stride_h - pad_h + i dilation_h, column
// x stride_w - pad_w + j dilation_w, or 0 in the padding.
void ExpectNaiveColumns(const std::string& conv_fields, const Geometry& g,
                        const vector<int64_t>& expected_shape) {
  SCOPED_TRACE(conv_fields);
  Blob image({2, 2, 5, 4}), columns;
  FillUniform(&image, -1, 1);
  Im2colLayer layer(Im2colParam(conv_fields));
  vector<Blob*> bottoms{&image}, tops{&columns};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(columns.shape(), expected_shape);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < g.kernel_h; ++i)
        for (int j = 0; j < g.kernel_w; ++j)
          for (int y = 0; y < columns.shape(2); ++y)
            for (int x = 0; x < columns.shape(3); ++x) {
              const int row = y * g.stride_h - g.pad_h + i * g.dilation_h;
              const int col = x * g.stride_w - g.pad_w + j * g.dilation_w;
              const bool inside = row >= 0 && row < 5 && col >= 0 && col < 4;
              const float expected = inside ? image.data_at(n, c, row, col) : 0.f;
              const int channel = (c * g.kernel_h + i) * g.kernel_w + j;
              ASSERT_EQ(columns.data_at(n, channel, y, x), expected)
                  << "n " << n << " channel " << channel << " at " << y << "," << x;
            }
}

// The message of the caffe::Error that SetUp throws names the layer and has `fragment`.
void ExpectSetUpError(const std::string& conv_fields, const vector<int64_t>& shape,
                      const std::string& fragment) {
  SCOPED_TRACE(conv_fields);
  Blob image(shape), columns;
  Im2colLayer layer(Im2colParam(conv_fields));
  vector<Blob*> bottoms{&image}, tops{&columns};
  const std::string what = ErrorOf([&] { layer.SetUp(bottoms, tops); });
  EXPECT_NE(what.find("layer 'cols' (Im2col)"), std::string::npos) << what;
  EXPECT_NE(what.find(fragment), std::string::npos) << what;
}

TEST(Im2colLayerTest, ColumnsOfATwoByTwoKernel) {
  // 1 2 3
  // 4 5 6
  // 7 8 9
  Blob image({1, 1, 3, 3}), columns;
  FillCounting(&image);
  Im2colLayer layer(Im2colParam("kernel_size: 2"));
  vector<Blob*> bottoms{&image}, tops{&columns};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(columns.shape(), (vector<int64_t>{1, 4, 2, 2}));
  // One channel per kernel position; within it, the 2 x 2 output positions.
  const vector<float> expected{1, 2, 4, 5,   // kernel (0, 0)
                               2, 3, 5, 6,   // kernel (0, 1)
                               4, 5, 7, 8,   // kernel (1, 0)
                               5, 6, 8, 9};  // kernel (1, 1)
  for (int i = 0; i < 16; ++i) EXPECT_EQ(columns.cpu_data()[i], expected[i]) << i;
}

TEST(Im2colLayerTest, PaddingGivesZeros) {
  // 1 2
  // 3 4, padded by 1, kernel 3, stride 2: one output position.
  Blob image({1, 1, 2, 2}), columns;
  FillCounting(&image);
  Im2colLayer layer(Im2colParam("kernel_size: 3 pad: 1 stride: 2"));
  vector<Blob*> bottoms{&image}, tops{&columns};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  ASSERT_EQ(columns.shape(), (vector<int64_t>{1, 9, 1, 1}));
  const vector<float> expected{0, 0, 0, 0, 1, 2, 0, 3, 4};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(columns.cpu_data()[i], expected[i]) << i;
}

TEST(Im2colLayerTest, MatchesTheDefinition) {
  ExpectNaiveColumns("kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 2 stride_w: 1",
                     {3, 2, 1, 0, 2, 1, 1, 1}, {2, 12, 3, 3});
  ExpectNaiveColumns("kernel_size: 2 pad: 1 dilation: 2", {2, 2, 1, 1, 1, 1, 2, 2}, {2, 8, 5, 4});
  // Two values of a repeated field: height, then width.
  ExpectNaiveColumns("kernel_size: 2 kernel_size: 3 stride: 1 stride: 2", {2, 3, 0, 0, 1, 2, 1, 1},
                     {2, 12, 4, 1});
  // The convolution-only fields are not read.
  ExpectNaiveColumns("num_output: 7 group: 3 bias_term: false kernel_size: 1",
                     {1, 1, 0, 0, 1, 1, 1, 1}, {2, 2, 5, 4});
}

TEST(Im2colLayerTest, BackwardSumsOverlappingColumns) {
  Blob image({1, 1, 3, 3}), columns;
  FillCounting(&image);
  Im2colLayer layer(Im2colParam("kernel_size: 2"));
  vector<Blob*> bottoms{&image}, tops{&columns};
  layer.SetUp(bottoms, tops);
  layer.Forward(bottoms, tops);
  for (int i = 0; i < 16; ++i) columns.mutable_cpu_diff()[i] = 1.f;
  for (int i = 0; i < 9; ++i) image.mutable_cpu_diff()[i] = 100.f;  // replaced, not added to
  layer.Backward(tops, {true}, bottoms);
  // How many 2 x 2 windows cover each input.
  const vector<float> expected{1, 2, 1, 2, 4, 2, 1, 2, 1};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(image.cpu_diff()[i], expected[i]) << i;
}

TEST(Im2colLayerTest, Gradient) {
  for (const char* fields : {"kernel_size: 3 pad: 1 stride: 2",
                             "kernel_h: 2 kernel_w: 3 "
                             "dilation: 2 pad: 1"}) {
    SCOPED_TRACE(fields);
    Blob image({2, 2, 5, 4}), columns;
    FillUniform(&image, -1, 1);
    Im2colLayer layer(Im2colParam(fields));
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&image}, {&columns});
    EXPECT_EQ(checker.checked(), image.count());
  }
}

TEST(Im2colLayerTest, Errors) {
  ExpectSetUpError("kernel_size: 2", {1, 2, 3, 3, 3}, "two spatial axes");
  ExpectSetUpError("kernel_size: 2", {1, 3, 3}, "two spatial axes");
  ExpectSetUpError("kernel_size: 2 axis: 2", {1, 2, 3, 3}, "with axis 2");
  ExpectSetUpError("pad: 1", {1, 1, 3, 3}, "(kernel_size is not set)");
  ExpectSetUpError("kernel_size: 4", {1, 1, 3, 3}, "kernel 4 exceeds the padded height 3");
  ExpectSetUpError("kernel_size: 1 kernel_size: 2 kernel_size: 3", {1, 1, 3, 3},
                   "must be given 0, 1 or 2 times");
  ExpectSetUpError("kernel_h: 2", {1, 1, 3, 3}, "must be given together");
  ExpectSetUpError("kernel_size: 2 kernel_h: 2 kernel_w: 2", {1, 1, 3, 3}, "alternatives");
  ExpectSetUpError("kernel_size: 2 stride: 0", {1, 1, 3, 3}, "stride must be positive");
  ExpectSetUpError("kernel_size: 2 dilation: 0", {1, 1, 3, 3}, "dilation must be positive");
  ExpectSetUpError("kernel_size: 3000000000", {1, 1, 3, 3}, "is too large");
}

TEST(Im2colLayerTest, RegisteredAsIm2col) {
  auto layer = LayerRegistry::CreateLayer(Im2colParam("kernel_size: 2"));
  EXPECT_STREQ(layer->type(), "Im2col");
}

}  // namespace
}  // namespace caffe
