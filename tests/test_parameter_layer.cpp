// The Parameter layer: a learnable blob as a top, trained through whatever reads it.
#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/net.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

TEST(ParameterLayerTest, TopIsTheBlob) {
  auto layer = LayerRegistry::CreateLayer(
      ParseLayer("name: 'p' type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }"));
  Blob top;
  layer->SetUp({}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(top.shape(), (vector<int64_t>{2, 3}));
  EXPECT_EQ(layer->blobs()[0]->asum_data(), 0.0) << "starts at zero, as BVLC's";
  FillUniform(layer->blobs()[0].get(), -1, 1, 3);
  layer->Forward({}, {&top});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(top.cpu_data()[i], layer->blobs()[0]->cpu_data()[i]);
  top.mutable_cpu_diff()[4] = 2.5f;
  EXPECT_EQ(layer->blobs()[0]->cpu_diff()[4], 2.5f) << "the top's gradient is the blob's";
}

// In a net the blob is a learnable parameter: with s = x + w and the loss
// |s - x|^2 / (2 N) = |w|^2 / (2 N), its gradient is w / N.
TEST(ParameterLayerTest, TrainsThroughTheLayersThatReadIt) {
  NetParameter param = ParseNet(R"(
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'p' type: 'Parameter' top: 'w' parameter_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'x' bottom: 'w' top: 's' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 's' bottom: 'x' top: 'loss' }
  )");
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, std::make_shared<Context>(), "net.prototxt");
  ASSERT_EQ(net.learnable_params().size(), 1u);
  Blob* w = net.learnable_params()[0];
  EXPECT_EQ(w->shape(), (vector<int64_t>{2, 3}));
  FillUniform(w, -1, 1, 5);
  FillUniform(net.blob_by_name("x").get(), -1, 1, 6);
  const float loss = net.ForwardBackward();
  double expected_loss = 0;
  for (int i = 0; i < 6; ++i) {
    expected_loss += w->cpu_data()[i] * w->cpu_data()[i] / 4;
    EXPECT_NEAR(w->cpu_diff()[i], w->cpu_data()[i] / 2, 1e-6) << i;
  }
  EXPECT_NEAR(loss, expected_loss, 1e-6);
}

TEST(ParameterLayerTest, ShapeIsRequired) {
  auto layer = LayerRegistry::CreateLayer(ParseLayer("name: 'p' type: 'Parameter'"));
  Blob top;
  const string what = ErrorOf([&] { layer->SetUp({}, {&top}); });
  EXPECT_NE(what.find("layer 'p'"), string::npos) << what;
  EXPECT_NE(what.find("parameter_param"), string::npos) << what;
}

}  // namespace
}  // namespace caffe
