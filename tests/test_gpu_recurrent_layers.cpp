// GPU paths of LSTMUnit (its own kernels) and of RNN and LSTM (their unrolled nets'
// layers on the device), each against its CPU path, with x_static and exposed states,
// and LSTMUnit's gradient check in GPU mode. Every test skips (with the reason) where
// no GPU can run this build's kernels.
#include <gtest/gtest.h>

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

// Bottom `cont_index` holds sequence indicators (0 at every third entry, 1 elsewhere)
// and takes no gradient; the other bottoms are uniform in [-1, 1] and take one.
GpuComparison WithContAt(int cont_index, int num_bottoms) {
  GpuComparison options;
  options.fill_bottom = [cont_index](int i, Blob* blob) {
    if (i != cont_index) {
      FillUniform(blob, -1, 1, 1701 + i);
      return;
    }
    float* cont = blob->mutable_cpu_data();
    for (int64_t k = 0; k < blob->count(); ++k) cont[k] = k % 3 == 0 ? 0.f : 1.f;
  };
  options.propagate_down.assign(num_bottoms, true);
  options.propagate_down[cont_index] = false;
  return options;
}

const char* kUnit =
    "name: 'unit' type: 'LSTMUnit' bottom: 'c_prev' bottom: 'gates' "
    "bottom: 'cont' top: 'c' top: 'h'";

std::string Recurrent(const std::string& type, const std::string& blobs,
                      const std::string& extra = "") {
  return "name: 'rec' type: '" + type + "' " + blobs +
         " recurrent_param { num_output: 6 weight_filler { type: 'uniform' min: -0.5 max: 0.5 }"
         " bias_filler { type: 'uniform' min: -0.5 max: 0.5 } " +
         extra + " }";
}

TEST(GpuLSTMUnitLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer(kUnit), {{1, 5, 7}, {1, 5, 28}, {1, 5}}, WithContAt(2, 3));
}

TEST(GpuLSTMUnitLayerTest, GradientInGpuMode) {
  SKIP_WITHOUT_GPU();
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(kUnit));
  layer->set_context(MakeGpuContext());
  Blob c_prev({1, 3, 2}), gates({1, 3, 8}), cont({1, 3}), c, h;
  FillUniform(&c_prev, -1.5, 1.5, 51);
  FillUniform(&gates, -2, 2, 52);
  SetValues(&cont, {1, 0, 1});
  for (int bottom : {0, 1}) {
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(layer.get(), {&c_prev, &gates, &cont}, {&c, &h}, bottom);
    EXPECT_EQ(checker.checked(), bottom == 0 ? 6 : 24);
  }
}

TEST(GpuRecurrentLayerTest, LSTMMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer(Recurrent("LSTM", "bottom: 'x' bottom: 'cont' top: 'h'")),
                      {{4, 3, 5}, {4, 3}}, WithContAt(1, 2));
}

TEST(GpuRecurrentLayerTest, LSTMWithStaticInputAndExposedStatesMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(
      ParseLayer(Recurrent("LSTM",
                           "bottom: 'x' bottom: 'cont' bottom: 'x_static' bottom: 'h0' "
                           "bottom: 'c0' top: 'h' top: 'hT' top: 'cT'",
                           "expose_hidden: true")),
      {{4, 3, 5}, {4, 3}, {3, 2}, {1, 3, 6}, {1, 3, 6}}, WithContAt(1, 5));
}

TEST(GpuRecurrentLayerTest, RNNMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer(Recurrent("RNN", "bottom: 'x' bottom: 'cont' top: 'o'")),
                      {{4, 3, 5}, {4, 3}}, WithContAt(1, 2));
}

TEST(GpuRecurrentLayerTest, RNNWithStaticInputAndExposedStateMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(
      ParseLayer(Recurrent("RNN",
                           "bottom: 'x' bottom: 'cont' bottom: 'x_static' bottom: 'h0' "
                           "top: 'o' top: 'hT'",
                           "expose_hidden: true")),
      {{4, 3, 5}, {4, 3}, {3, 2}, {1, 3, 6}}, WithContAt(1, 4));
}

}  // namespace
}  // namespace caffe
