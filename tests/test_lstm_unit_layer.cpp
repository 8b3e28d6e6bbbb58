// The LSTMUnit layer: forward values worked out by hand and from the published
// formulas, cont = 0 forgetting the previous cell (in both passes), the gradient
// check with respect to c_prev and the gate inputs, and the errors for bad shapes, in
// place, and a gradient asked of cont.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/lstm_unit_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const char* kUnit =
    "name: 'unit' type: 'LSTMUnit' bottom: 'c_prev' bottom: 'gates' "
    "bottom: 'cont' top: 'c' top: 'h'";

float Sigmoid(float v) { return 1.f / (1.f + std::exp(-v)); }

// The blobs of one unit over `streams` streams of `dim` cells, set up.
struct Unit {
  Unit(int64_t streams, int64_t dim)
      : layer(ParseLayer(kUnit)),
        c_prev({1, streams, dim}),
        gates({1, streams, 4 * dim}),
        cont({1, streams}) {}
  void SetUp() { layer.SetUp(bottoms(), tops()); }
  vector<Blob*> bottoms() { return {&c_prev, &gates, &cont}; }
  vector<Blob*> tops() { return {&c, &h}; }

  LSTMUnitLayer layer;
  Blob c_prev, gates, cont, c, h;
};

TEST(LSTMUnitLayerTest, TopsHaveTheCellsShape) {
  Unit unit(3, 5);
  unit.SetUp();
  EXPECT_EQ(unit.c.shape(), (vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(unit.h.shape(), (vector<int64_t>{1, 3, 5}));
}

TEST(LSTMUnitLayerTest, ForwardMatchesHandValues) {
  // One cell per stream; gate inputs in the order input, forget, output, candidate.
  // A 0 input gives a gate of 1/2; atanh(1/2) gives a candidate of 1/2.
  Unit unit(3, 1);
  const float half_candidate = std::atanh(0.5f);
  SetValues(&unit.c_prev, {2.f, 2.f, 2.f});
  SetValues(&unit.gates, {0.f, 0.f, 0.f, 0.f,             //
                          0.f, 0.f, 0.f, half_candidate,  //
                          0.f, 0.f, 0.f, half_candidate});
  SetValues(&unit.cont, {1.f, 0.f, 1.f});
  unit.SetUp();
  unit.layer.Forward(unit.bottoms(), unit.tops());
  // c = cont f c_prev + i g, h = o tanh(c).
  const float expected_c[] = {0.5f * 2.f, 0.5f * 0.5f, 0.5f * 2.f + 0.5f * 0.5f};
  for (int n = 0; n < 3; ++n) {
    EXPECT_NEAR(unit.c.cpu_data()[n], expected_c[n], 1e-6f) << "stream " << n;
    EXPECT_NEAR(unit.h.cpu_data()[n], 0.5f * std::tanh(expected_c[n]), 1e-6f) << "stream " << n;
  }
  // The same numbers written out: tanh(1) / 2 and tanh(1/4) / 2.
  EXPECT_NEAR(unit.h.cpu_data()[0], 0.3807971f, 1e-6f);
  EXPECT_NEAR(unit.h.cpu_data()[1], 0.1224593f, 1e-6f);
}

TEST(LSTMUnitLayerTest, ForwardMatchesTheFormulas) {
  const int64_t streams = 3, dim = 4;
  Unit unit(streams, dim);
  FillUniform(&unit.c_prev, -2, 2, 11);
  FillUniform(&unit.gates, -3, 3, 12);
  SetValues(&unit.cont, {1.f, 0.f, 1.f});
  unit.SetUp();
  unit.layer.Forward(unit.bottoms(), unit.tops());
  for (int64_t n = 0; n < streams; ++n) {
    const float* x = unit.gates.cpu_data() + n * 4 * dim;
    for (int64_t d = 0; d < dim; ++d) {
      const float input = Sigmoid(x[d]), forget = Sigmoid(x[dim + d]);
      const float output = Sigmoid(x[2 * dim + d]), candidate = std::tanh(x[3 * dim + d]);
      const float c = unit.cont.cpu_data()[n] * forget * unit.c_prev.cpu_data()[n * dim + d] +
                      input * candidate;
      EXPECT_NEAR(unit.c.cpu_data()[n * dim + d], c, 1e-6f) << n << ", " << d;
      EXPECT_NEAR(unit.h.cpu_data()[n * dim + d], output * std::tanh(c), 1e-6f) << n << ", " << d;
    }
  }
}

TEST(LSTMUnitLayerTest, ContZeroForgetsThePreviousCell) {
  // Stream 1 starts a sequence: its c and h do not depend on c_prev, and backward
  // gives its c_prev and forget-gate inputs no gradient.
  const int64_t dim = 2;
  Unit unit(2, dim);
  FillUniform(&unit.c_prev, -2, 2, 21);
  FillUniform(&unit.gates, -2, 2, 22);
  SetValues(&unit.cont, {1.f, 0.f});
  unit.SetUp();
  unit.layer.Forward(unit.bottoms(), unit.tops());
  const vector<float> c(unit.c.cpu_data(), unit.c.cpu_data() + unit.c.count());
  unit.c_prev.mutable_cpu_data()[dim] += 5.f;  // stream 1's first cell
  unit.c_prev.mutable_cpu_data()[0] += 5.f;    // stream 0's first cell
  unit.layer.Forward(unit.bottoms(), unit.tops());
  EXPECT_EQ(unit.c.cpu_data()[dim], c[dim]);
  EXPECT_NE(unit.c.cpu_data()[0], c[0]);

  for (Blob* top : unit.tops()) {
    for (int64_t i = 0; i < top->count(); ++i) top->mutable_cpu_diff()[i] = 1.f;
  }
  unit.layer.Backward(unit.tops(), {true, true, false}, unit.bottoms());
  for (int64_t d = 0; d < dim; ++d) {
    EXPECT_EQ(unit.c_prev.cpu_diff()[dim + d], 0.f) << "unit " << d;
    EXPECT_EQ(unit.gates.cpu_diff()[4 * dim + dim + d], 0.f) << "forget gate " << d;
    EXPECT_NE(unit.c_prev.cpu_diff()[d], 0.f) << "stream 0, unit " << d;
  }
}

TEST(LSTMUnitLayerTest, GradientWithRespectToThePreviousCell) {
  Unit unit(3, 2);
  FillUniform(&unit.c_prev, -1.5, 1.5, 31);
  FillUniform(&unit.gates, -2, 2, 32);
  SetValues(&unit.cont, {1.f, 0.f, 1.f});
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&unit.layer, unit.bottoms(), unit.tops(), 0);
  EXPECT_EQ(checker.checked(), 6);
}

TEST(LSTMUnitLayerTest, GradientWithRespectToTheGateInputs) {
  Unit unit(3, 2);
  FillUniform(&unit.c_prev, -1.5, 1.5, 41);
  FillUniform(&unit.gates, -2, 2, 42);
  SetValues(&unit.cont, {1.f, 0.f, 1.f});
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&unit.layer, unit.bottoms(), unit.tops(), 1);
  EXPECT_EQ(checker.checked(), 24);
}

TEST(LSTMUnitLayerTest, RefusesAGradientForCont) {
  Unit unit(2, 2);
  unit.SetUp();
  unit.layer.Forward(unit.bottoms(), unit.tops());
  EXPECT_EQ(ErrorOf([&] {
              unit.layer.Backward(unit.tops(), {true, true, true}, unit.bottoms());
            }),
            "layer 'unit' (LSTMUnit): cannot give bottom 'cont' (the continuation indicators) a "
            "gradient; set propagate_down: false for it");
  EXPECT_FALSE(unit.layer.AllowForceBackward(2));
  EXPECT_TRUE(unit.layer.AllowForceBackward(0));
}

TEST(LSTMUnitLayerTest, RefusesBottomsOfTheWrongShape) {
  {
    Unit unit(2, 3);
    unit.gates.Reshape({1, 2, 9});
    const std::string what = ErrorOf([&] { unit.SetUp(); });
    EXPECT_NE(what.find("layer 'unit' (LSTMUnit): bottom 'gates' (the gate inputs) must be "
                        "1 x N x 4D = 1x2x12"),
              std::string::npos)
        << what;
  }
  {
    Unit unit(2, 3);
    unit.cont.Reshape({2, 1});
    const std::string what = ErrorOf([&] { unit.SetUp(); });
    EXPECT_NE(what.find("bottom 'cont' (the continuation indicators) must be 1 x N = 1x2, found "
                        "shape 2x1"),
              std::string::npos)
        << what;
  }
  {
    Unit unit(2, 3);
    unit.c_prev.Reshape({2, 2, 3});
    const std::string what = ErrorOf([&] { unit.SetUp(); });
    EXPECT_NE(what.find("bottom 'c_prev' (the previous cell) must be 1 x N x D"), std::string::npos)
        << what;
  }
}

TEST(LSTMUnitLayerTest, RefusesToRunInPlace) {
  Unit unit(2, 3);
  vector<Blob*> tops{&unit.c_prev, &unit.h};
  const std::string what = ErrorOf([&] { unit.layer.SetUp(unit.bottoms(), tops); });
  EXPECT_NE(what.find("cannot run in place (top 'c' is bottom 'c_prev')"), std::string::npos)
      << what;
}

TEST(LSTMUnitLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry::CreateLayer(ParseLayer(kUnit))->type(), "LSTMUnit");
}

}  // namespace
}  // namespace caffe
