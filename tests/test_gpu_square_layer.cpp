// Square on the device (docs/writing_a_layer.md): the same values as the CPU path, and
// a gradient check in GPU mode. Skips without a usable CUDA device.
#include <gtest/gtest.h>

#include <memory>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/square_layer.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char kSquare[] = "name: 'sq' type: 'Square' bottom: 'x' top: 'y'";

TEST(GpuSquareLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // Also expects the top to be produced on the device, not by the host fallback.
  ExpectGpuMatchesCpu(ParseLayer(kSquare), {{2, 3, 4, 5}});
  // A count that is no multiple of the launcher's block size.
  ExpectGpuMatchesCpu(ParseLayer(kSquare), {{3, 1001}});
}

TEST(GpuSquareLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob bottom({2, 3, 4}), top;
  FillUniform(&bottom, -2, 2);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(kSquare), Mode::GPU);
  layer->set_context(MakeGpuContext());
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(layer.get(), {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 24);
}

}  // namespace
}  // namespace caffe
