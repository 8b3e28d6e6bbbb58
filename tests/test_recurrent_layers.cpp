// RNN and LSTM: forward values against a step-by-step reference computed here from
// the layers' own weight blobs, cont = 0 forgetting what came before, the state carried
// from one Forward to the next, x_static, expose_hidden, gradient checks, the weight
// blobs' count, order and shapes, the errors for bad bottoms, the layers inside nets
// (their weights as the net's parameters, snapshots, a test net sharing the train
// net's weights, the memory plan), and an LSTM trained by the SGD solver to echo its
// input one step late.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

constexpr int64_t kT = 3, kN = 2, kInputs = 3, kDim = 4, kStaticInputs = 2;

// A layer of `type` named 'rec' with `dim` outputs whose weights and biases are all
// non-zero, so that every path carries a signal. `blobs` names bottoms and tops (for
// error messages); `extra` adds recurrent_param fields.
LayerParameter RecurrentParam(const std::string& type, int64_t dim, const std::string& extra = "",
                              const std::string& blobs = "") {
  return ParseLayer("name: 'rec' type: '" + type + "' " + blobs +
                    " recurrent_param { num_output: " + std::to_string(dim) +
                    " weight_filler { type: 'uniform' min: -0.6 max: 0.6 }"
                    " bias_filler { type: 'uniform' min: -0.4 max: 0.4 } " +
                    extra + " }");
}

// The bottoms and tops of one recurrent layer: x (T x N x inputs), cont (T x N), an
// optional x_static (N x static_inputs) and `exposed` initial states (1 x N x dim),
// with as many final-state tops. x, x_static and the states are filled at random.
struct Recurrence {
  Recurrence(const LayerParameter& param, int64_t timesteps, int64_t streams, int64_t inputs,
             int64_t static_inputs = 0, int exposed = 0)
      : layer(LayerRegistry::CreateLayer(param)),
        x({timesteps, streams, inputs}),
        cont({timesteps, streams}) {
    FillUniform(&x, -1, 1, 101);
    bottoms = {&x, &cont};
    if (static_inputs > 0) {
      x_static.Reshape({streams, static_inputs});
      FillUniform(&x_static, -1, 1, 102);
      bottoms.push_back(&x_static);
    }
    const int64_t dim = param.recurrent_param().num_output();
    tops = {&out};
    for (int s = 0; s < exposed; ++s) {
      states[s].Reshape({1, streams, dim});
      FillUniform(&states[s], -0.8f, 0.8f, 103 + s);
      bottoms.push_back(&states[s]);
      tops.push_back(&finals[s]);
    }
  }
  void SetUp() { layer->SetUp(bottoms, tops); }
  void Forward() { layer->Forward(bottoms, tops); }

  shared_ptr<Layer> layer;
  Blob x, cont, x_static;
  Blob states[2], finals[2];  // initial and final h (and c)
  Blob out;
  vector<Blob*> bottoms, tops;
};

// What the reference computes: the top (T x N x D) and the state after the last
// timestep (N x D each; c only for the LSTM).
struct Reference {
  vector<float> output, h, c;
};

// out[r] += sum_k w[r][k] v[k] for a rows x cols row-major w.
void AddProduct(const float* w, int64_t rows, int64_t cols, const float* v, vector<double>* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t k = 0; k < cols; ++k) sum += double(w[r * cols + k]) * v[k];
    (*out)[r] += sum;
  }
}

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// BVLC's LSTM, one timestep and stream at a time, from the weights W_xc, b_c,
// [W_xc_static,] W_hc; h and c are the initial states (N x D; empty for zeros).
Reference LSTMReference(Layer& layer, const Blob& x, const Blob& cont, const Blob* x_static,
                        vector<float> h, vector<float> c) {
  const int64_t T = x.shape(0), N = x.shape(1), I = x.count(2);
  const vector<shared_ptr<Blob>>& w = layer.blobs();
  const int64_t D = w[1]->count() / 4;
  const float* w_xc = w[0]->cpu_data();
  const float* b_c = w[1]->cpu_data();
  const float* w_static = x_static ? w[2]->cpu_data() : nullptr;
  const float* w_hc = w[x_static ? 3 : 2]->cpu_data();
  const int64_t S = x_static ? x_static->count(1) : 0;
  if (h.empty()) h.assign(N * D, 0.f);
  if (c.empty()) c.assign(N * D, 0.f);
  Reference result;
  result.output.resize(T * N * D);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      const float keep = cont.cpu_data()[t * N + n];
      vector<float> h_kept(D);
      for (int64_t d = 0; d < D; ++d) h_kept[d] = keep * h[n * D + d];
      vector<double> gates(b_c, b_c + 4 * D);
      AddProduct(w_xc, 4 * D, I, x.cpu_data() + (t * N + n) * I, &gates);
      if (x_static) AddProduct(w_static, 4 * D, S, x_static->cpu_data() + n * S, &gates);
      AddProduct(w_hc, 4 * D, D, h_kept.data(), &gates);
      for (int64_t d = 0; d < D; ++d) {
        const double input = Sigmoid(gates[d]), forget = Sigmoid(gates[D + d]);
        const double output = Sigmoid(gates[2 * D + d]), candidate = std::tanh(gates[3 * D + d]);
        const double cell = keep * forget * c[n * D + d] + input * candidate;
        c[n * D + d] = static_cast<float>(cell);
        h[n * D + d] = static_cast<float>(output * std::tanh(cell));
        result.output[(t * N + n) * D + d] = h[n * D + d];
      }
    }
  }
  result.h = h;
  result.c = c;
  return result;
}

// BVLC's RNN likewise, from W_xh, b_h, [W_xh_static,] W_hh, W_ho, b_o; h is the
// initial state (N x D; empty for zeros).
Reference RNNReference(Layer& layer, const Blob& x, const Blob& cont, const Blob* x_static,
                       vector<float> h) {
  const int64_t T = x.shape(0), N = x.shape(1), I = x.count(2);
  const vector<shared_ptr<Blob>>& w = layer.blobs();
  const int64_t D = w[1]->count();
  const int first_recurrent = x_static ? 3 : 2;
  const float* w_xh = w[0]->cpu_data();
  const float* b_h = w[1]->cpu_data();
  const float* w_static = x_static ? w[2]->cpu_data() : nullptr;
  const float* w_hh = w[first_recurrent]->cpu_data();
  const float* w_ho = w[first_recurrent + 1]->cpu_data();
  const float* b_o = w[first_recurrent + 2]->cpu_data();
  const int64_t S = x_static ? x_static->count(1) : 0;
  if (h.empty()) h.assign(N * D, 0.f);
  Reference result;
  result.output.resize(T * N * D);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      const float keep = cont.cpu_data()[t * N + n];
      vector<float> h_kept(D);
      for (int64_t d = 0; d < D; ++d) h_kept[d] = keep * h[n * D + d];
      vector<double> preactivation(b_h, b_h + D);
      AddProduct(w_xh, D, I, x.cpu_data() + (t * N + n) * I, &preactivation);
      if (x_static) AddProduct(w_static, D, S, x_static->cpu_data() + n * S, &preactivation);
      AddProduct(w_hh, D, D, h_kept.data(), &preactivation);
      for (int64_t d = 0; d < D; ++d) {
        h[n * D + d] = static_cast<float>(std::tanh(preactivation[d]));
      }
      vector<double> output(b_o, b_o + D);
      AddProduct(w_ho, D, D, h.data() + n * D, &output);
      for (int64_t d = 0; d < D; ++d) {
        result.output[(t * N + n) * D + d] = static_cast<float>(std::tanh(output[d]));
      }
    }
  }
  result.h = h;
  return result;
}

Reference ReferenceOf(const std::string& type, Layer& layer, const Blob& x, const Blob& cont,
                      const Blob* x_static = nullptr, const vector<float>& h = {},
                      const vector<float>& c = {}) {
  return type == "LSTM" ? LSTMReference(layer, x, cont, x_static, h, c)
                        : RNNReference(layer, x, cont, x_static, h);
}

vector<float> Values(const Blob& blob) {
  return vector<float>(blob.cpu_data(), blob.cpu_data() + blob.count());
}

void ExpectNear(const Blob& actual, const vector<float>& expected, const char* what) {
  ASSERT_EQ(actual.count(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.cpu_data()[i], expected[i], 2e-5f) << what << " element " << i;
  }
}

// Copies to->count() values of `from`, starting at element `offset`, into `to`.
void CopyPart(const Blob& from, int64_t offset, Blob* to) {
  std::copy(from.cpu_data() + offset, from.cpu_data() + offset + to->count(),
            to->mutable_cpu_data());
}

const char* const kTypes[] = {"RNN", "LSTM"};

// ---- weights ----

TEST(RecurrentLayerTest, LSTMWeightsInBVLCsOrder) {
  Recurrence plain(RecurrentParam("LSTM", kDim), kT, kN, kInputs);
  plain.SetUp();
  const auto& w = plain.layer->blobs();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0]->shape(), (vector<int64_t>{4 * kDim, kInputs}));  // W_xc
  EXPECT_EQ(w[1]->shape(), (vector<int64_t>{4 * kDim}));           // b_c
  EXPECT_EQ(w[2]->shape(), (vector<int64_t>{4 * kDim, kDim}));     // W_hc

  Recurrence with_static(RecurrentParam("LSTM", kDim), kT, kN, kInputs, kStaticInputs);
  with_static.SetUp();
  const auto& ws = with_static.layer->blobs();
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(ws[0]->shape(), (vector<int64_t>{4 * kDim, kInputs}));        // W_xc
  EXPECT_EQ(ws[1]->shape(), (vector<int64_t>{4 * kDim}));                 // b_c
  EXPECT_EQ(ws[2]->shape(), (vector<int64_t>{4 * kDim, kStaticInputs}));  // W_xc_static
  EXPECT_EQ(ws[3]->shape(), (vector<int64_t>{4 * kDim, kDim}));           // W_hc
}

TEST(RecurrentLayerTest, RNNWeightsInBVLCsOrder) {
  // Every axis after T and N is an input: 3 x 2 inputs per timestep.
  Recurrence plain(RecurrentParam("RNN", kDim), kT, kN, 1);
  plain.x.Reshape({kT, kN, 3, 2});
  plain.SetUp();
  const auto& w = plain.layer->blobs();
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0]->shape(), (vector<int64_t>{kDim, 6}));     // W_xh
  EXPECT_EQ(w[1]->shape(), (vector<int64_t>{kDim}));        // b_h
  EXPECT_EQ(w[2]->shape(), (vector<int64_t>{kDim, kDim}));  // W_hh
  EXPECT_EQ(w[3]->shape(), (vector<int64_t>{kDim, kDim}));  // W_ho
  EXPECT_EQ(w[4]->shape(), (vector<int64_t>{kDim}));        // b_o

  Recurrence with_static(RecurrentParam("RNN", kDim), kT, kN, kInputs, kStaticInputs);
  with_static.SetUp();
  const auto& ws = with_static.layer->blobs();
  ASSERT_EQ(ws.size(), 6u);
  EXPECT_EQ(ws[0]->shape(), (vector<int64_t>{kDim, kInputs}));        // W_xh
  EXPECT_EQ(ws[1]->shape(), (vector<int64_t>{kDim}));                 // b_h
  EXPECT_EQ(ws[2]->shape(), (vector<int64_t>{kDim, kStaticInputs}));  // W_xh_static
  EXPECT_EQ(ws[3]->shape(), (vector<int64_t>{kDim, kDim}));           // W_hh
  EXPECT_EQ(ws[4]->shape(), (vector<int64_t>{kDim, kDim}));           // W_ho
  EXPECT_EQ(ws[5]->shape(), (vector<int64_t>{kDim}));                 // b_o
}

TEST(RecurrentLayerTest, WeightsGivenWithTheParameterAreKept) {
  // A deploy net can carry the weights inline; they replace the fillers' values.
  Recurrence source(RecurrentParam("LSTM", kDim), kT, kN, kInputs);
  source.SetUp();
  LayerParameter param = RecurrentParam("LSTM", kDim);
  for (const auto& blob : source.layer->blobs()) {
    blob->scale_data(2.f);  // not what the same fillers would draw again
    blob->ToProto(param.add_blobs());
  }
  Recurrence copy(param, kT, kN, kInputs);
  copy.SetUp();
  ASSERT_EQ(copy.layer->blobs().size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    ExpectNear(*copy.layer->blobs()[j], Values(*source.layer->blobs()[j]), "weight");
  }
}

// ---- forward ----

TEST(RecurrentLayerTest, ForwardMatchesTheStepByStepReference) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    Recurrence r(RecurrentParam(type, kDim), kT, kN, kInputs);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 0});  // stream 1 starts again at t = 2
    r.SetUp();
    r.Forward();
    EXPECT_EQ(r.out.shape(), (vector<int64_t>{kT, kN, kDim}));
    ExpectNear(r.out, ReferenceOf(type, *r.layer, r.x, r.cont).output, "top");
  }
}

TEST(RecurrentLayerTest, ContZeroForgetsEverythingBefore) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    Recurrence r(RecurrentParam(type, kDim), kT, kN, kInputs);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 0});
    r.SetUp();
    r.Forward();
    const vector<float> before = Values(r.out);
    // New inputs for stream 1 before its restart at t = 2, and for stream 0 at t = 0.
    for (int64_t t = 0; t < 2; ++t) {
      float* stream_1 = r.x.mutable_cpu_data() + (t * kN + 1) * kInputs;
      for (int64_t i = 0; i < kInputs; ++i) stream_1[i] += 0.5f;
    }
    r.x.mutable_cpu_data()[0] += 0.5f;
    r.Forward();
    for (int64_t d = 0; d < kDim; ++d) {
      const int64_t restarted = (2 * kN + 1) * kDim + d, continued = (2 * kN + 0) * kDim + d;
      EXPECT_FLOAT_EQ(r.out.cpu_data()[restarted], before[restarted]) << "stream 1, t = 2";
      EXPECT_NE(r.out.cpu_data()[continued], before[continued]) << "stream 0, t = 2";
      EXPECT_NE(r.out.cpu_data()[(1 * kN + 1) * kDim + d], before[(1 * kN + 1) * kDim + d])
          << "stream 1, t = 1";
    }
  }
}

TEST(RecurrentLayerTest, StateCarriesOverToTheNextForwardWhereContIsOne) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    // One sequence of 2T steps, fed T at a time.
    Blob x_all({2 * kT, kN, kInputs}), cont_all({2 * kT, kN});
    FillUniform(&x_all, -1, 1, 201);
    SetValues(&cont_all, {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    Recurrence r(RecurrentParam(type, kDim), kT, kN, kInputs);
    CopyPart(x_all, 0, &r.x);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 1});
    r.SetUp();
    r.Forward();
    CopyPart(x_all, kT * kN * kInputs, &r.x);
    SetValues(&r.cont, {1, 1, 1, 1, 1, 1});
    r.Forward();
    const vector<float> whole = ReferenceOf(type, *r.layer, x_all, cont_all).output;
    ExpectNear(r.out, vector<float>(whole.begin() + kT * kN * kDim, whole.end()), "second half");

    // cont 0 at the first timestep starts afresh.
    SetValues(&r.cont, {0, 0, 1, 1, 1, 1});
    r.Forward();
    ExpectNear(r.out, ReferenceOf(type, *r.layer, r.x, r.cont).output, "restarted");
  }
}

TEST(RecurrentLayerTest, NewStreamCountStartsFromZeros) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    Recurrence r(RecurrentParam(type, kDim), kT, kN, kInputs);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 1});
    r.SetUp();
    r.Forward();
    // Three streams, all continuing: the state from two streams cannot carry over.
    r.x.Reshape({kT, 3, kInputs});
    FillUniform(&r.x, -1, 1, 301);
    r.cont.Reshape({kT, 3});
    SetValues(&r.cont, {1, 1, 1, 1, 1, 1, 1, 1, 1});
    r.Forward();
    EXPECT_EQ(r.out.shape(), (vector<int64_t>{kT, 3, kDim}));
    ExpectNear(r.out, ReferenceOf(type, *r.layer, r.x, r.cont).output, "top");
  }
}

TEST(RecurrentLayerTest, StaticInputEntersEveryTimestep) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    Recurrence r(RecurrentParam(type, kDim), kT, kN, kInputs, kStaticInputs);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 0});
    r.SetUp();
    r.Forward();
    ExpectNear(r.out, ReferenceOf(type, *r.layer, r.x, r.cont, &r.x_static).output, "top");
  }
}

TEST(RecurrentLayerTest, LSTMExposedStatesAreTheFirstAndLast) {
  Recurrence r(RecurrentParam("LSTM", kDim, "expose_hidden: true"), kT, kN, kInputs, 0, 2);
  SetValues(&r.cont, {1, 1, 1, 0, 1, 1});  // both streams continue the given states
  r.SetUp();
  r.Forward();
  ASSERT_EQ(r.finals[0].shape(), (vector<int64_t>{1, kN, kDim}));
  ASSERT_EQ(r.finals[1].shape(), (vector<int64_t>{1, kN, kDim}));
  const Reference expected =
      LSTMReference(*r.layer, r.x, r.cont, nullptr, Values(r.states[0]), Values(r.states[1]));
  ExpectNear(r.out, expected.output, "h");
  ExpectNear(r.finals[0], expected.h, "final h");
  ExpectNear(r.finals[1], expected.c, "final c");
  for (int64_t i = 0; i < kN * kDim; ++i) {
    EXPECT_EQ(r.finals[0].cpu_data()[i], r.out.cpu_data()[(kT - 1) * kN * kDim + i]);
  }
  // The states come from the bottoms, not from the last pass.
  r.Forward();
  ExpectNear(r.out, expected.output, "h, second pass");
}

TEST(RecurrentLayerTest, RNNExposedStateIsHNotTheOutput) {
  Recurrence r(RecurrentParam("RNN", kDim, "expose_hidden: true"), kT, kN, kInputs, 0, 1);
  SetValues(&r.cont, {1, 1, 1, 0, 1, 1});
  r.SetUp();
  r.Forward();
  const Reference expected = RNNReference(*r.layer, r.x, r.cont, nullptr, Values(r.states[0]));
  ExpectNear(r.out, expected.output, "o");
  ExpectNear(r.finals[0], expected.h, "final h");
}

// ---- gradients ----

TEST(RecurrentLayerTest, GradientWithRespectToXAndTheWeights) {
  // x is 3 x 2 x 2; LSTM weights 8 x 2 + 8 + 8 x 2, RNN weights 2 x 2 + 2 + 3 (2 x 2) + 2.
  const int64_t expected_checked[] = {12 + 16, 12 + 40};
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(kTypes[k]);
    Recurrence r(RecurrentParam(kTypes[k], 2), kT, kN, 2);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 0});
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(r.layer.get(), r.bottoms, r.tops, 0);
    EXPECT_EQ(checker.checked(), expected_checked[k]);
  }
}

TEST(RecurrentLayerTest, GradientWithRespectToTheStaticInput) {
  // x_static is 2 x 2, and the static weights join the others.
  const int64_t expected_checked[] = {4 + 20, 4 + 56};
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(kTypes[k]);
    Recurrence r(RecurrentParam(kTypes[k], 2), kT, kN, 2, 2);
    SetValues(&r.cont, {0, 0, 1, 1, 1, 0});
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(r.layer.get(), r.bottoms, r.tops, 2);
    EXPECT_EQ(checker.checked(), expected_checked[k]);
  }
}

TEST(RecurrentLayerTest, GradientWithRespectToTheInitialStates) {
  // The objective weighs the final states' tops too, so their gradients are checked.
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(kTypes[k]);
    const int states = k == 0 ? 1 : 2;
    Recurrence r(RecurrentParam(kTypes[k], 2, "expose_hidden: true"), kT, kN, 2, 0, states);
    SetValues(&r.cont, {1, 1, 1, 0, 1, 1});
    for (int s = 0; s < states; ++s) {
      GradientChecker checker(1e-2f, 1e-3f);
      checker.CheckGradient(r.layer.get(), r.bottoms, r.tops, 2 + s, false);
      EXPECT_EQ(checker.checked(), 4) << "state " << s;
    }
  }
}

TEST(RecurrentLayerTest, NoGradientLandsInABottomThatWantsNone) {
  Recurrence r(RecurrentParam("LSTM", kDim), kT, kN, kInputs);
  SetValues(&r.cont, {0, 0, 1, 1, 1, 0});
  r.SetUp();
  r.Forward();
  std::fill_n(r.out.mutable_cpu_diff(), r.out.count(), 1.f);
  std::fill_n(r.x.mutable_cpu_diff(), r.x.count(), 7.f);
  r.layer->Backward(r.tops, {false, false}, r.bottoms);
  for (int64_t i = 0; i < r.x.count(); ++i) EXPECT_EQ(r.x.cpu_diff()[i], 7.f) << i;
  // The weights still learn.
  EXPECT_GT(r.layer->blobs()[0]->asum_diff(), 0.f);
}

// ---- errors ----

// The message of the error SetUp throws, which must name the layer.
std::string SetUpError(Recurrence* r, const std::string& type) {
  const std::string what = ErrorOf([&] { r->SetUp(); });
  EXPECT_NE(what.find("layer 'rec' (" + type + "): "), std::string::npos) << what;
  return what;
}

const char* kNamedBlobs = "bottom: 'x' bottom: 'cont' top: 'h'";

TEST(RecurrentLayerTest, NumOutputMustBePositive) {
  Recurrence unset(ParseLayer("name: 'rec' type: 'LSTM' recurrent_param { }"), kT, kN, kInputs);
  EXPECT_NE(SetUpError(&unset, "LSTM")
                .find("recurrent_param.num_output must be positive (it is "
                      "not set)"),
            std::string::npos);
  Recurrence zero(ParseLayer("name: 'rec' type: 'RNN' recurrent_param { num_output: 0 }"), kT, kN,
                  kInputs);
  const std::string what = SetUpError(&zero, "RNN");
  EXPECT_NE(what.find("recurrent_param.num_output must be positive"), std::string::npos) << what;
  EXPECT_EQ(what.find("not set"), std::string::npos) << what;
}

TEST(RecurrentLayerTest, ContMustBeTByN) {
  for (const char* type : kTypes) {
    Recurrence r(RecurrentParam(type, kDim, "", kNamedBlobs), kT, kN, kInputs);
    r.cont.Reshape({kT, kN + 1});
    const std::string what = SetUpError(&r, type);
    EXPECT_NE(what.find("bottom 'cont' (the sequence continuation indicators) must be T x N = "
                        "3x2 for bottom 'x' of shape 3x2x3, found shape 3x3"),
              std::string::npos)
        << what;
  }
}

TEST(RecurrentLayerTest, XNeedsTimeStreamAndInputAxes) {
  Recurrence r(RecurrentParam("LSTM", kDim, "", kNamedBlobs), kT, kN, kInputs);
  r.x.Reshape({kT, kN});
  const std::string what = SetUpError(&r, "LSTM");
  EXPECT_NE(what.find("bottom 'x' must be T x N x ..."), std::string::npos) << what;
  EXPECT_NE(what.find("found shape 3x2"), std::string::npos) << what;
}

TEST(RecurrentLayerTest, StaticInputNeedsOneRowPerStream) {
  Recurrence r(RecurrentParam("RNN", kDim, "", "bottom: 'x' bottom: 'cont' bottom: 'x_static'"), kT,
               kN, kInputs, kStaticInputs);
  r.x_static.Reshape({kN + 1, kStaticInputs});
  const std::string what = SetUpError(&r, "RNN");
  EXPECT_NE(what.find("bottom 'x_static' (the static input) must be N x ... with N = 2"),
            std::string::npos)
      << what;
}

TEST(RecurrentLayerTest, ExposedStatesNeedTheirBottomsAndShape) {
  Recurrence missing(RecurrentParam("LSTM", kDim, "expose_hidden: true"), kT, kN, kInputs);
  missing.tops.push_back(&missing.finals[0]);
  missing.tops.push_back(&missing.finals[1]);
  EXPECT_NE(SetUpError(&missing, "LSTM").find("expected at least 4 bottom blob(s), found 2"),
            std::string::npos);

  Recurrence wrong(RecurrentParam("LSTM", kDim, "expose_hidden: true",
                                  "bottom: 'x' bottom: 'cont' bottom: 'h0' bottom: 'c0'"),
                   kT, kN, kInputs, 0, 2);
  wrong.states[1].Reshape({1, kN, kDim + 1});
  const std::string what = SetUpError(&wrong, "LSTM");
  EXPECT_NE(what.find("bottom 'c0' (the initial c) must be 1 x N x num_output = 1x2x4, found "
                      "shape 1x2x5"),
            std::string::npos)
      << what;
}

TEST(RecurrentLayerTest, TimestepsAndInputSizeAreFixedAtSetUp) {
  Recurrence r(RecurrentParam("LSTM", kDim, "", kNamedBlobs), kT, kN, kInputs);
  SetValues(&r.cont, {0, 0, 1, 1, 1, 1});
  r.SetUp();
  r.Forward();
  r.x.Reshape({kT + 1, kN, kInputs});
  r.cont.Reshape({kT + 1, kN});
  std::string what = ErrorOf([&] { r.Forward(); });
  EXPECT_NE(what.find("layer 'rec' (LSTM): bottom 'x' now has 4 timesteps (axis 0); the layer "
                      "was set up for 3"),
            std::string::npos)
      << what;
  r.x.Reshape({kT, kN, kInputs + 1});
  r.cont.Reshape({kT, kN});
  what = ErrorOf([&] { r.Forward(); });
  EXPECT_NE(what.find("has 4 inputs per timestep and stream; the weights expect 3"),
            std::string::npos)
      << what;
}

TEST(RecurrentLayerTest, RefusesAGradientForCont) {
  Recurrence r(RecurrentParam("RNN", kDim, "", kNamedBlobs), kT, kN, kInputs);
  r.SetUp();
  r.Forward();
  EXPECT_NE(ErrorOf([&] {
              r.layer->Backward(r.tops, {true, true}, r.bottoms);
            })
                .find("layer 'rec' (RNN): cannot give bottom 'cont' (the sequence continuation "
                      "indicators) a gradient"),
            std::string::npos);
  EXPECT_FALSE(r.layer->AllowForceBackward(1));
}

TEST(RecurrentLayerTest, RefusesToRunInPlace) {
  Recurrence r(RecurrentParam("LSTM", kDim, "", kNamedBlobs), kT, kN, kInputs);
  r.tops = {&r.x};
  EXPECT_NE(SetUpError(&r, "LSTM").find("cannot run in place (top 'h' is bottom 'x')"),
            std::string::npos);
}

// ---- in a net ----

// An LSTM between two learned layers, so that its bottom takes a gradient and its top
// is read by another layer.
const char* kSequenceNet = R"(
  name: 'sequence'
  layer { name: 'input' type: 'Input' top: 'data' top: 'cont' top: 'target'
          input_param { shape { dim: 4 dim: 3 dim: 2 } shape { dim: 4 dim: 3 }
                        shape { dim: 4 dim: 3 dim: 1 } } }
  layer { name: 'embed' type: 'InnerProduct' bottom: 'data' top: 'x'
          inner_product_param { num_output: 3 axis: 2
            weight_filler { type: 'uniform' min: -0.5 max: 0.5 } } }
  layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h'
          recurrent_param { num_output: 5
            weight_filler { type: 'uniform' min: -0.5 max: 0.5 }
            bias_filler { type: 'uniform' min: -0.5 max: 0.5 } } }
  layer { name: 'pred' type: 'InnerProduct' bottom: 'h' top: 'pred'
          inner_product_param { num_output: 1 axis: 2
            weight_filler { type: 'uniform' min: -0.5 max: 0.5 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'pred' bottom: 'target' top: 'loss' }
)";

void FillSequenceInputs(Net* net, uint64_t seed) {
  FillUniform(net->blob_by_name("data").get(), -1, 1, seed);
  FillUniform(net->blob_by_name("target").get(), -1, 1, seed + 1);
  // Stream 2 starts a second sequence at t = 2.
  SetValues(net->blob_by_name("cont").get(), {0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1});
}

TEST(RecurrentLayerNetTest, TheNetLearnsTheLayersWeightsOnly) {
  Net net(ParseNet(kSequenceNet), std::make_shared<Context>());
  // embed's weight and bias, the LSTM's W_xc, b_c and W_hc, pred's weight and bias: the
  // timesteps' copies of W_hc are not parameters of the net.
  ASSERT_EQ(net.learnable_params().size(), 7u);
  EXPECT_EQ(net.learnable_param_names()[2], "lstm[0]");
  EXPECT_EQ(net.learnable_param_names()[4], "lstm[2]");
  EXPECT_EQ(net.learnable_params()[4], net.layer_by_name("lstm")->blobs()[2].get());
}

TEST(RecurrentLayerNetTest, SnapshotRestoresTheOutputs) {
  Net trained(ParseNet(kSequenceNet), std::make_shared<Context>());
  FillSequenceInputs(&trained, 11);
  trained.Forward();
  NetParameter snapshot;
  trained.ToProto(&snapshot);
  int lstm_blobs = -1;
  for (const LayerParameter& layer : snapshot.layer()) {
    if (layer.name() == "lstm") lstm_blobs = layer.blobs_size();
  }
  EXPECT_EQ(lstm_blobs, 3);

  Net restored(ParseNet(kSequenceNet), std::make_shared<Context>(99));  // other fillers
  restored.CopyTrainedLayersFrom(snapshot);
  FillSequenceInputs(&restored, 11);
  restored.Forward();
  ExpectNear(*restored.blob_by_name("pred"), Values(*trained.blob_by_name("pred")), "pred");
}

TEST(RecurrentLayerNetTest, TestNetSharingTheTrainNetsWeightsComputesTheSame) {
  NetParameter param = ParseNet(kSequenceNet);
  Net train(param, std::make_shared<Context>());
  param.mutable_state()->set_phase(TEST);
  Net test(param, std::make_shared<Context>(99));
  test.ShareTrainedLayersWith(train);
  // The weights change after the sharing, as the solver's updates do; every timestep
  // of the test net must see the new values.
  for (Blob* weight : train.learnable_params()) weight->scale_data(1.5f);
  FillSequenceInputs(&train, 21);
  FillSequenceInputs(&test, 21);
  train.Forward();
  test.Forward();
  ExpectNear(*test.blob_by_name("h"), Values(*train.blob_by_name("h")), "h");
}

TEST(RecurrentLayerNetTest, MemoryPlanGivesTheSameGradients) {
  Net plain(ParseNet(kSequenceNet), std::make_shared<Context>());
  Net planned(ParseNet(kSequenceNet), std::make_shared<Context>());
  EXPECT_GT(planned.ShareActivationDiffs().blobs, 0);
  for (uint64_t seed : {31, 41}) {
    for (Net* net : {&plain, &planned}) {
      FillSequenceInputs(net, seed);
      net->ClearParamDiffs();
    }
    EXPECT_FLOAT_EQ(planned.ForwardBackward(), plain.ForwardBackward());
    for (size_t p = 0; p < plain.learnable_params().size(); ++p) {
      SCOPED_TRACE(plain.learnable_param_names()[p]);
      const Blob& expected = *plain.learnable_params()[p];
      const Blob& actual = *planned.learnable_params()[p];
      for (int64_t i = 0; i < expected.count(); ++i) {
        EXPECT_NEAR(actual.cpu_diff()[i], expected.cpu_diff()[i], 1e-6f) << i;
      }
    }
  }
}

// ---- learning ----

TEST(RecurrentLayerNetTest, LSTMLearnsToEchoItsInputOneStepLate) {
  // Target at t is the input at t - 1 (0 at a sequence's first step): from x_t alone
  // nothing beats predicting 0, whose loss is about the starting loss, so a loss far
  // below it needs the state carried from one timestep to the next. 16 streams of 8
  // fresh random steps per iteration.
  const int T = 8, N = 16;
  SolverParameter solver_param = ParseSolver(
      "type: 'SGD' base_lr: 0.025 momentum: 0.9 lr_policy: 'fixed' max_iter: 1000 "
      "clip_gradients: 10 random_seed: 3 display: 0 snapshot_after_train: false");
  *solver_param.mutable_net_param() = ParseNet(R"(
    name: 'echo'
    layer { name: 'input' type: 'Input' top: 'x' top: 'cont' top: 'target'
            input_param { shape { dim: 8 dim: 16 dim: 1 } shape { dim: 8 dim: 16 }
                          shape { dim: 8 dim: 16 dim: 1 } } }
    layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h'
            recurrent_param { num_output: 16 weight_filler { type: 'xavier' }
                              bias_filler { type: 'constant' value: 0 } } }
    layer { name: 'pred' type: 'InnerProduct' bottom: 'h' top: 'pred'
            inner_product_param { num_output: 1 axis: 2 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'pred' bottom: 'target' top: 'loss' }
  )");
  auto solver = SolverRegistry::CreateSolver(solver_param, std::make_shared<Context>());
  Net* net = solver->net().get();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  const int iterations = 1000, window = 20;
  float first = 0, last = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    float* x = net->blob_by_name("x")->mutable_cpu_data();
    float* cont = net->blob_by_name("cont")->mutable_cpu_data();
    float* target = net->blob_by_name("target")->mutable_cpu_data();
    for (int t = 0; t < T; ++t) {
      for (int n = 0; n < N; ++n) {
        x[t * N + n] = uniform(rng);
        cont[t * N + n] = t == 0 ? 0.f : 1.f;
        target[t * N + n] = t == 0 ? 0.f : x[(t - 1) * N + n];
      }
    }
    solver->Step(1);
    const float loss = net->blob_by_name("loss")->cpu_data()[0];
    if (iter < window) first += loss / window;
    if (iter >= iterations - window) last += loss / window;
  }
  EXPECT_LT(last, 0.3f * first) << "mean loss over the first " << window << " iterations " << first
                                << ", over the last " << window << " " << last;
}

}  // namespace
}  // namespace caffe
