// Caffe's contract for learnable blobs: Backward ADDS its gradient to the weight diffs
// (the solver clears them once per step, so iter_size > 1 and shared weights sum
// their contributions), while bottom diffs are overwritten. One check for every CPU
// layer (and engine) with learnable blobs: backward from a nonzero start S must give
// S + (what backward gives from zero). The GPU comparison (gpu_test_support.cpp)
// starts its weight diffs from nonzero values too and relies on this CPU behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#ifdef USE_DNNL
#include "caffe/layers/dnnl_inner_product_layer.hpp"
#endif
#include "test_util.hpp"

namespace caffe {
namespace {

struct Case {
  std::string layer;  // text-format LayerParameter
  std::vector<int64_t> shape;
  bool integer_bottom = false;  // Embed: indices in [0, 5)
};

// `layer` built from c.layer (the registry's choice unless the caller made a class).
void ExpectBackwardAccumulates(const Case& c, std::shared_ptr<Layer> layer = nullptr) {
  SCOPED_TRACE(c.layer);
  if (layer == nullptr) layer = LayerRegistry::CreateLayer(ParseLayer(c.layer));
  Blob bottom(c.shape), top;
  if (c.integer_bottom) {
    for (int64_t i = 0; i < bottom.count(); ++i) bottom.mutable_cpu_data()[i] = float(i * 3 % 5);
  } else {
    FillUniform(&bottom, -1, 1, 11);
  }
  const std::vector<Blob*> bottoms{&bottom}, tops{&top};
  layer->SetUp(bottoms, tops);
  ASSERT_FALSE(layer->blobs().empty()) << "this case has no learnable blobs to check";
  layer->Forward(bottoms, tops);
  Blob top_diff(top.shape());
  FillGaussian(&top_diff, 1.f, 13);
  std::copy(top_diff.cpu_data(), top_diff.cpu_data() + top_diff.count(), top.mutable_cpu_diff());
  const std::vector<bool> propagate{!c.integer_bottom};

  // What backward adds, from zero.
  for (auto& blob : layer->blobs()) std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.f);
  layer->Backward(tops, propagate, bottoms);
  std::vector<std::vector<float>> gradient;
  bool any_nonzero = false;
  for (auto& blob : layer->blobs()) {
    gradient.emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
    for (float g : gradient.back()) any_nonzero |= g != 0;
  }
  ASSERT_TRUE(any_nonzero) << "backward gave no weight gradient at all: the check would be empty";

  // From a nonzero start.
  std::vector<std::vector<float>> start;
  for (size_t b = 0; b < layer->blobs().size(); ++b) {
    Blob& blob = *layer->blobs()[b];
    Blob values(blob.shape());
    FillGaussian(&values, 0.5f, 17 + b);
    start.emplace_back(values.cpu_data(), values.cpu_data() + values.count());
    std::copy(start.back().begin(), start.back().end(), blob.mutable_cpu_diff());
  }
  layer->Backward(tops, propagate, bottoms);
  for (size_t b = 0; b < layer->blobs().size(); ++b) {
    const float* diff = layer->blobs()[b]->cpu_diff();
    for (size_t i = 0; i < gradient[b].size(); ++i) {
      const float expected = start[b][i] + gradient[b][i];
      ASSERT_NEAR(diff[i], expected, 1e-5f * std::max(1.f, std::fabs(expected)))
          << "blob " << b << " element " << i << ": started at " << start[b][i]
          << ", gradient " << gradient[b][i];
    }
  }
}

TEST(WeightDiffAccumulationTest, EveryLearnableLayerAddsToItsWeightDiffs) {
  const std::string gaussian = "weight_filler { type: 'gaussian' std: 0.5 } ";
  const std::vector<Case> cases = {
      {"type: 'InnerProduct' inner_product_param { num_output: 4 " + gaussian + "}",
       {2, 3, 2, 2}},
      {"type: 'InnerProduct' inner_product_param { num_output: 4 transpose: true " + gaussian +
           "}",
       {3, 5}},
      {"type: 'Convolution' convolution_param { engine: CAFFE num_output: 4 kernel_size: 3 "
       "pad: 1 group: 2 " + gaussian + "}",
       {2, 4, 5, 5}},
      {"type: 'Convolution' convolution_param { engine: CAFFE num_output: 3 kernel_size: 1 " +
           gaussian + "}",
       {2, 2, 3, 3}},
      {"type: 'Deconvolution' convolution_param { num_output: 3 kernel_size: 2 stride: 2 " +
           gaussian + "}",
       {2, 2, 3, 3}},
      {"type: 'Embed' embed_param { input_dim: 5 num_output: 3 " + gaussian + "}", {6}, true},
      {"type: 'PReLU'", {2, 3, 2, 2}},
      {"type: 'PReLU' prelu_param { channel_shared: true }", {2, 3, 2, 2}},
      {"type: 'Scale' scale_param { bias_term: true }", {2, 3, 2, 2}},
      {"type: 'Bias'", {2, 3, 2, 2}},
  };
  for (const Case& c : cases) ExpectBackwardAccumulates(c);
}

#ifdef USE_DNNL
// oneDNN computes weight gradients into its own buffers; the layer must add them.
TEST(WeightDiffAccumulationTest, DnnlEngineAddsToItsWeightDiffs) {
  const std::string gaussian = "weight_filler { type: 'gaussian' std: 0.5 } ";
  ExpectBackwardAccumulates({"type: 'Convolution' convolution_param { engine: DNNL "
                             "num_output: 4 kernel_size: 3 pad: 1 " + gaussian + "}",
                             {2, 3, 6, 6}});
  ExpectBackwardAccumulates({"type: 'Deconvolution' convolution_param { engine: DNNL "
                             "num_output: 3 kernel_size: 2 stride: 2 " + gaussian + "}",
                             {2, 2, 3, 3}});
  // InnerProduct has no engine field; its oneDNN class is built directly.
  const Case inner_product{"type: 'InnerProduct' inner_product_param { num_output: 4 " +
                               gaussian + "}",
                           {2, 3, 2, 2}};
  ExpectBackwardAccumulates(inner_product,
                            std::make_shared<DnnlInnerProductLayer>(ParseLayer(inner_product.layer)));
}
#endif

}  // namespace
}  // namespace caffe
