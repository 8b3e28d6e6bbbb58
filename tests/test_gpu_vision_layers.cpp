// GPU paths of the reference (CAFFE-engine) vision layers against their CPU paths:
// im2col_gpu / col2im_gpu directly, then Convolution, Deconvolution, InnerProduct,
// Pooling and LRN through ExpectGpuMatchesCpu (forward, backward, weight diffs) and a
// finite-difference gradient check run in GPU mode. Every case is chosen so that a
// wrong index or a missed branch in a kernel shows up as a mismatch: padding, stride
// and dilation together, groups, 1x1 (no im2col), several bottoms, CEIL windows that
// fall wholly in the padding, the mask top, global pooling, both LRN regions.
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/util/im2col.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Well-separated values in [-1, 1) in shuffled order: no two inputs of a MAX window
// come within the finite-difference step of each other (the argmax would flip).
void FillDistinct(Blob* blob) {
  vector<int64_t> order(blob->count());
  for (int64_t i = 0; i < blob->count(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  for (int64_t i = 0; i < blob->count(); ++i) {
    blob->mutable_cpu_data()[i] = 2.f * order[i] / blob->count() - 1.f;
  }
}

// A layer of `param` with its context in GPU mode, gradient-checked like its CPU test.
template <typename LayerType>
void CheckGradientOnGpu(const LayerParameter& param, const vector<int64_t>& shape,
                        float stepsize, float threshold, int num_tops = 1,
                        bool distinct_inputs = false) {
  SCOPED_TRACE(param.ShortDebugString());
  Blob bottom(shape);
  if (distinct_inputs) {
    FillDistinct(&bottom);
  } else {
    FillUniform(&bottom, -1, 1, 31);
  }
  vector<std::unique_ptr<Blob>> tops;
  vector<Blob*> top_ptrs;
  for (int i = 0; i < num_tops; ++i) {
    tops.push_back(std::make_unique<Blob>());
    top_ptrs.push_back(tops.back().get());
  }
  LayerType layer(param);
  layer.set_context(MakeGpuContext());
  GradientChecker checker(stepsize, threshold);
  checker.CheckGradient(&layer, {&bottom}, top_ptrs);
  int64_t expected = bottom.count();
  for (auto& blob : layer.blobs()) expected += blob->count();
  EXPECT_EQ(checker.checked(), expected);
}

// ---- im2col / col2im ----

#ifdef USE_CUDA  // the cases are only read where im2col_gpu exists
struct Im2colCase {
  int channels, height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w,
      dilation_h, dilation_w;
};

std::string Describe(const Im2colCase& c) {
  return "c" + std::to_string(c.channels) + " " + std::to_string(c.height) + "x" +
         std::to_string(c.width) + " k" + std::to_string(c.kernel_h) + "x" +
         std::to_string(c.kernel_w) + " p" + std::to_string(c.pad_h) + "," +
         std::to_string(c.pad_w) + " s" + std::to_string(c.stride_h) + "," +
         std::to_string(c.stride_w) + " d" + std::to_string(c.dilation_h) + "," +
         std::to_string(c.dilation_w);
}

const std::vector<Im2colCase> kIm2colCases = {
    {3, 7, 6, 3, 3, 1, 1, 2, 2, 1, 1},  // pad + stride
    {2, 9, 8, 3, 2, 2, 1, 1, 2, 2, 3},  // dilation, rectangular everything
    {4, 5, 5, 1, 1, 0, 0, 1, 1, 1, 1},  // 1x1: columns are the image
    {1, 4, 6, 4, 6, 0, 0, 1, 1, 1, 1},  // kernel = image: one output position
    {2, 5, 4, 2, 2, 1, 0, 3, 3, 1, 1},  // stride > kernel: some pixels unread
};
#endif

TEST(GpuIm2colTest, Im2colMatchesCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  for (const Im2colCase& c : kIm2colCases) {
    SCOPED_TRACE(Describe(c));
    const int out_h = (c.height + 2 * c.pad_h - (c.dilation_h * (c.kernel_h - 1) + 1)) / c.stride_h + 1;
    const int out_w = (c.width + 2 * c.pad_w - (c.dilation_w * (c.kernel_w - 1) + 1)) / c.stride_w + 1;
    Blob image({c.channels, c.height, c.width});
    FillUniform(&image, -1, 1, 5);
    Blob cpu_columns({int64_t{c.channels} * c.kernel_h * c.kernel_w, out_h, out_w});
    Blob gpu_columns(cpu_columns.shape());
    // Garbage first, so an entry the kernel forgets to write shows up.
    FillUniform(&gpu_columns, 100, 200, 6);
    im2col(image.cpu_data(), c.channels, c.height, c.width, c.kernel_h, c.kernel_w, c.pad_h,
           c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
           cpu_columns.mutable_cpu_data());
    im2col_gpu(image.gpu_data(), c.channels, c.height, c.width, c.kernel_h, c.kernel_w,
               c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
               gpu_columns.mutable_gpu_data());
    for (int64_t i = 0; i < cpu_columns.count(); ++i) {
      ASSERT_EQ(gpu_columns.cpu_data()[i], cpu_columns.cpu_data()[i]) << "column entry " << i;
    }
  }
#endif
}

TEST(GpuIm2colTest, Col2imMatchesCpu) {
  SKIP_WITHOUT_GPU();
#ifdef USE_CUDA
  for (const Im2colCase& c : kIm2colCases) {
    SCOPED_TRACE(Describe(c));
    const int out_h = (c.height + 2 * c.pad_h - (c.dilation_h * (c.kernel_h - 1) + 1)) / c.stride_h + 1;
    const int out_w = (c.width + 2 * c.pad_w - (c.dilation_w * (c.kernel_w - 1) + 1)) / c.stride_w + 1;
    Blob columns({int64_t{c.channels} * c.kernel_h * c.kernel_w, out_h, out_w});
    FillUniform(&columns, -1, 1, 7);
    Blob cpu_image({c.channels, c.height, c.width});
    Blob gpu_image(cpu_image.shape());
    FillUniform(&gpu_image, 100, 200, 8);  // col2im must overwrite, not accumulate
    col2im(columns.cpu_data(), c.channels, c.height, c.width, c.kernel_h, c.kernel_w, c.pad_h,
           c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
           cpu_image.mutable_cpu_data());
    col2im_gpu(columns.gpu_data(), c.channels, c.height, c.width, c.kernel_h, c.kernel_w,
               c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
               gpu_image.mutable_gpu_data());
    // The gather adds each pixel's terms in the host's order: the sums are identical.
    for (int64_t i = 0; i < cpu_image.count(); ++i) {
      ASSERT_EQ(gpu_image.cpu_data()[i], cpu_image.cpu_data()[i]) << "image element " << i;
    }
  }
#endif
}

// ---- Convolution / Deconvolution ----

LayerParameter ConvLayerParam(const std::string& type, const std::string& conv_fields,
                              int num_tops = 1) {
  std::string tops;
  for (int i = 0; i < num_tops; ++i) tops += " top: 't" + std::to_string(i) + "'";
  return ParseLayer("name: 'conv' type: '" + type + "'" + tops +
                    " convolution_param { " + conv_fields +
                    " weight_filler { type: 'gaussian' std: 0.5 }"
                    " bias_filler { type: 'uniform' min: -1 max: 1 } }");
}

TEST(GpuConvolutionTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"num_output: 4 kernel_size: 3 stride: 2 pad: 1", {2, 3, 7, 6}},
      {"num_output: 6 kernel_size: 3 group: 3 dilation: 2 pad: 2", {2, 6, 8, 7}},
      {"num_output: 5 kernel_size: 1 bias_term: false", {3, 4, 5, 5}},
      {"num_output: 3 kernel_h: 3 kernel_w: 2 stride_h: 1 stride_w: 2 pad_h: 0 pad_w: 1",
       {2, 2, 6, 7}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    ExpectGpuMatchesCpu(ConvLayerParam("Convolution", c.first), {c.second});
  }
  // The n-d and forced n-d forms run the host path in GPU mode; still the same result.
  GpuComparison host_path;
  host_path.expect_device_output = false;
  ExpectGpuMatchesCpu(ConvLayerParam("Convolution", "num_output: 2 kernel_size: 2 pad: 1 stride: 2"),
                      {{1, 2, 3, 4, 3}}, host_path);
  ExpectGpuMatchesCpu(
      ConvLayerParam("Convolution", "num_output: 2 kernel_size: 3 pad: 1 force_nd_im2col: true"),
      {{2, 2, 5, 5}}, host_path);
  // Two bottoms share the weights: weight and bias diffs add up over both.
  ExpectGpuMatchesCpu(ConvLayerParam("Convolution", "num_output: 3 kernel_size: 3 pad: 1", 2),
                      {{2, 2, 5, 5}, {2, 2, 5, 5}});
}

TEST(GpuConvolutionTest, WeightGradientOnlyLeavesBottomDiff) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.propagate_down = {false};
  ExpectGpuMatchesCpu(ConvLayerParam("Convolution", "num_output: 4 kernel_size: 3 stride: 2"),
                      {{2, 3, 7, 7}}, options);
}

TEST(GpuConvolutionTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  CheckGradientOnGpu<ConvolutionLayer>(
      ConvLayerParam("Convolution", "num_output: 3 kernel_size: 3 stride: 2 pad: 1"),
      {2, 2, 5, 5}, 1e-2f, 5e-3f);
  CheckGradientOnGpu<ConvolutionLayer>(
      ConvLayerParam("Convolution", "num_output: 4 kernel_size: 2 group: 2 dilation: 2 pad: 1"),
      {2, 4, 5, 4}, 1e-2f, 5e-3f);
}

TEST(GpuDeconvolutionTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"num_output: 3 kernel_size: 3 stride: 2 pad: 1", {2, 2, 4, 5}},
      {"num_output: 4 kernel_size: 2 group: 2 dilation: 2", {2, 4, 3, 3}},
      {"num_output: 2 kernel_size: 1 bias_term: false", {2, 3, 4, 4}},
      {"num_output: 2 kernel_h: 2 kernel_w: 3 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 0",
       {1, 3, 4, 4}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    ExpectGpuMatchesCpu(ConvLayerParam("Deconvolution", c.first), {c.second});
  }
  // n-d runs the host path in GPU mode (its top stays on the host); still the same result.
  GpuComparison host_path;
  host_path.expect_device_output = false;
  ExpectGpuMatchesCpu(ConvLayerParam("Deconvolution", "num_output: 2 kernel_size: 2 stride: 2"),
                      {{1, 2, 2, 3, 2}}, host_path);
}

TEST(GpuDeconvolutionTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  CheckGradientOnGpu<DeconvolutionLayer>(
      ConvLayerParam("Deconvolution", "num_output: 3 kernel_size: 3 stride: 2 pad: 1"),
      {2, 2, 3, 3}, 1e-2f, 5e-3f);
  CheckGradientOnGpu<DeconvolutionLayer>(
      ConvLayerParam("Deconvolution", "num_output: 4 kernel_size: 2 group: 2 dilation: 2"),
      {1, 4, 3, 3}, 1e-2f, 5e-3f);
}

// ---- InnerProduct ----

LayerParameter IpParam(const std::string& fields) {
  return ParseLayer("name: 'ip' type: 'InnerProduct' inner_product_param { " + fields +
                    " weight_filler { type: 'gaussian' std: 0.5 }"
                    " bias_filler { type: 'uniform' min: -1 max: 1 } }");
}

TEST(GpuInnerProductTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(IpParam("num_output: 7"), {{5, 3, 2, 2}});
  ExpectGpuMatchesCpu(IpParam("num_output: 7 transpose: true"), {{5, 3, 2, 2}});
  ExpectGpuMatchesCpu(IpParam("num_output: 4 bias_term: false"), {{3, 9}});
  ExpectGpuMatchesCpu(IpParam("num_output: 4 transpose: true bias_term: false"), {{3, 9}});
  ExpectGpuMatchesCpu(IpParam("num_output: 3 axis: 2"), {{2, 3, 4, 5}});
}

TEST(GpuInnerProductTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  for (const char* transpose : {"false", "true"}) {
    CheckGradientOnGpu<InnerProductLayer>(
        IpParam(std::string("num_output: 5 transpose: ") + transpose), {2, 3, 2, 2}, 1e-2f,
        1e-3f);
  }
}

// ---- Pooling ----

LayerParameter PoolParam(const std::string& pool_fields, int num_tops = 1,
                         const std::string& extra = "") {
  std::string tops = " top: 'pooled'";
  if (num_tops > 1) tops += " top: 'mask'";
  return ParseLayer("name: 'pool' type: 'Pooling'" + tops + " pooling_param { " + pool_fields +
                    " } " + extra);
}

TEST(GpuPoolingTest, MaxMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> cases = {
      "pool: MAX kernel_size: 3 stride: 2 pad: 1",
      "pool: MAX kernel_size: 2 stride: 2",
      "pool: MAX kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 round_mode: FLOOR",
      // CEIL rounding with stride > kernel: the last windows lie wholly outside.
      "pool: MAX kernel_size: 1 stride: 3",
      "pool: MAX global_pooling: true",
  };
  for (const std::string& fields : cases) {
    SCOPED_TRACE(fields);
    ExpectGpuMatchesCpu(PoolParam(fields), {{2, 3, 7, 8}});
    ExpectGpuMatchesCpu(PoolParam(fields, 2), {{2, 3, 7, 8}});  // with the mask top
  }
}

TEST(GpuPoolingTest, MaxTiesResolveLikeCpu) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  // Few distinct values: windows hold ties, and the first one must win on both sides.
  options.fill_bottom = [](int, Blob* bottom) {
    for (int64_t i = 0; i < bottom->count(); ++i) {
      bottom->mutable_cpu_data()[i] = static_cast<float>((i * 7) % 3);
    }
  };
  ExpectGpuMatchesCpu(PoolParam("pool: MAX kernel_size: 3 stride: 1 pad: 1", 2), {{1, 2, 6, 6}},
                      options);
}

TEST(GpuPoolingTest, AveMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> cases = {
      // Padding counts in the divisor, clipped to the padded image.
      "pool: AVE kernel_size: 3 stride: 2 pad: 1",
      "pool: AVE kernel_size: 2 stride: 1",
      "pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 1",
      "pool: AVE kernel_size: 3 stride: 2 round_mode: FLOOR",
      "pool: AVE kernel_size: 1 stride: 3",
      "pool: AVE global_pooling: true",
  };
  for (const std::string& fields : cases) {
    SCOPED_TRACE(fields);
    ExpectGpuMatchesCpu(PoolParam(fields), {{2, 3, 7, 8}});
  }
}

TEST(GpuPoolingTest, StochasticTestPhaseMatchesCpu) {
  SKIP_WITHOUT_GPU();
  // STOCHASTIC keeps the host path in GPU mode; check that the fallback is wired.
  GpuComparison options;
  options.fill_bottom = [](int, Blob* bottom) { FillUniform(bottom, 0.5f, 1.5f, 9); };
  options.expect_device_output = false;
  ExpectGpuMatchesCpu(PoolParam("pool: STOCHASTIC kernel_size: 3 stride: 2", 1, "phase: TEST"),
                      {{2, 2, 5, 5}}, options);
}

TEST(GpuPoolingTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  CheckGradientOnGpu<PoolingLayer>(PoolParam("pool: MAX kernel_size: 3 stride: 2 pad: 1"),
                                   {2, 2, 5, 5}, 1e-2f, 1e-3f, 1, true);
  CheckGradientOnGpu<PoolingLayer>(PoolParam("pool: MAX kernel_size: 2 stride: 1", 2),
                                   {2, 2, 5, 5}, 1e-2f, 1e-3f, 2, true);
  CheckGradientOnGpu<PoolingLayer>(PoolParam("pool: AVE kernel_size: 3 stride: 2 pad: 1"),
                                   {2, 2, 5, 4}, 1e-2f, 1e-3f);
  CheckGradientOnGpu<PoolingLayer>(PoolParam("pool: AVE global_pooling: true"), {2, 2, 5, 4},
                                   1e-2f, 1e-3f);
}

// ---- LRN ----

LayerParameter LrnParam(const std::string& fields) {
  return ParseLayer("name: 'norm' type: 'LRN' lrn_param { " + fields + " }");
}

TEST(GpuLRNTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> cases = {
      "local_size: 5 alpha: 0.3 beta: 0.8 k: 1.5",
      "local_size: 3 alpha: 0.8 beta: 0.75 k: 1",
      // A window wider than the channel count: clipped on both sides at once.
      "local_size: 9 alpha: 0.5 beta: 0.6 k: 2",
      "local_size: 3 alpha: 2 beta: 0.75 norm_region: WITHIN_CHANNEL",
      "local_size: 5 alpha: 0.4 beta: 0.9 norm_region: WITHIN_CHANNEL",
  };
  GpuComparison options;
  options.fill_bottom = [](int, Blob* bottom) { FillUniform(bottom, -2, 2, 11); };
  for (const std::string& fields : cases) {
    SCOPED_TRACE(fields);
    ExpectGpuMatchesCpu(LrnParam(fields), {{2, 7, 4, 5}}, options);
  }
}

TEST(GpuLRNTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  CheckGradientOnGpu<LRNLayer>(LrnParam("local_size: 3 alpha: 0.8 beta: 0.75 k: 1"),
                               {2, 6, 3, 2}, 1e-2f, 2e-3f);
  CheckGradientOnGpu<LRNLayer>(
      LrnParam("local_size: 3 alpha: 2 beta: 0.75 norm_region: WITHIN_CHANNEL"), {2, 2, 5, 4},
      1e-2f, 2e-3f);
}

}  // namespace
}  // namespace caffe
