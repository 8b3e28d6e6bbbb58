#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/softmax_layer.hpp"
#include "caffe/util/math_functions.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(SoftmaxLayerTest, ForwardMatchesHandValuesAndIsStable) {
  // The second row is the first shifted by 1000: naive exp would overflow.
  Blob bottom({2, 3}), top;
  const float x[] = {1, 2, 3, 1001, 1002, 1003};
  std::copy(x, x + 6, bottom.mutable_cpu_data());
  shared_ptr<Layer> layer =
      LayerRegistry::CreateLayer(ParseLayer("name: 'sm' type: 'Softmax'"));
  EXPECT_STREQ(layer->type(), "Softmax");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  const float expected[] = {0.0900305732f, 0.2447284711f, 0.6652409558f};
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(top.cpu_data()[n * 3 + c], expected[c], 1e-6);
  }
}

TEST(SoftmaxLayerTest, InnerAxisMatchesNaiveLoop) {
  for (int axis : {1, -2, 2, 0}) {
    Blob bottom({2, 3, 4}), top;
    FillUniform(&bottom, -3, 3);
    LayerParameter param = ParseLayer("name: 'sm' type: 'Softmax'");
    param.mutable_softmax_param()->set_axis(axis);
    SoftmaxLayer layer(param);
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    const int a = axis < 0 ? axis + 3 : axis;
    const int64_t outer = bottom.count(0, a), channels = bottom.shape(a),
                  inner = bottom.count(a + 1);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t c = 0; c < channels; ++c)
          sum += std::exp(double(bottom.cpu_data()[(o * channels + c) * inner + i]));
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t k = (o * channels + c) * inner + i;
          EXPECT_NEAR(top.cpu_data()[k], std::exp(double(bottom.cpu_data()[k])) / sum, 1e-6)
              << "axis " << axis;
        }
      }
    }
  }
}

TEST(SoftmaxLayerTest, Gradient) {
  for (int axis : {1, -1}) {
    Blob bottom({2, 3, 2}), top;
    FillUniform(&bottom, -2, 2);
    LayerParameter param = ParseLayer("name: 'sm' type: 'Softmax'");
    param.mutable_softmax_param()->set_axis(axis);
    SoftmaxLayer layer(param);
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), 12);
  }
}

TEST(SoftmaxLayerTest, InPlaceMatchesOutOfPlace) {
  Blob bottom({2, 4, 3}), top, in_place;
  FillUniform(&bottom, -2, 2);
  in_place.CopyFrom(bottom, false, true);
  SoftmaxLayer a(ParseLayer("name: 'sm' type: 'Softmax'"));
  SoftmaxLayer b(ParseLayer("name: 'sm' type: 'Softmax'"));
  a.SetUp({&bottom}, {&top});
  b.SetUp({&in_place}, {&in_place});
  a.Forward({&bottom}, {&top});
  b.Forward({&in_place}, {&in_place});
  Blob dy({2, 4, 3});
  FillUniform(&dy, -1, 1, 11);
  math::copy(24, dy.cpu_data(), top.mutable_cpu_diff());
  math::copy(24, dy.cpu_data(), in_place.mutable_cpu_diff());
  a.Backward({&top}, {true}, {&bottom});
  b.Backward({&in_place}, {true}, {&in_place});
  for (int i = 0; i < 24; ++i) {
    EXPECT_FLOAT_EQ(in_place.cpu_data()[i], top.cpu_data()[i]);
    EXPECT_NEAR(in_place.cpu_diff()[i], bottom.cpu_diff()[i], 1e-7);
  }
}

TEST(SoftmaxLayerTest, AxisOutOfRangeIsAnError) {
  Blob bottom({2, 3}), top;
  LayerParameter param = ParseLayer("name: 'sm' type: 'Softmax' softmax_param { axis: 2 }");
  SoftmaxLayer layer(param);
  try {
    layer.SetUp({&bottom}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'sm'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("axis 2"), std::string::npos) << e.what();
  }
}

}  // namespace caffe
