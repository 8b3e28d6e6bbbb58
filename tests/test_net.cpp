// Net construction: state rules, split insertion, in-place tops, weight sharing,
// backward pruning, weight save/load, and the errors users see for bad nets.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "caffe/net.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

shared_ptr<Net> MakeNet(const string& text, Phase phase = TRAIN, const vector<string>& stages = {},
                        int level = 0) {
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->set_level(level);
  for (const string& s : stages) param.mutable_state()->add_stage(s);
  return std::make_shared<Net>(param, std::make_shared<Context>(), "net.prototxt");
}

string ErrorOf(const string& text) {
  try {
    MakeNet(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool Has(const vector<string>& names, const string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const char* kInputAndIp = R"(
  layer { name: 'input' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 4 } } }
)";

TEST(NetTest, StateRulesSelectLayers) {
  const string text = string(kInputAndIp) + R"(
    layer { name: 'train_only' type: 'InnerProduct' bottom: 'x' top: 'a'
            include { phase: TRAIN } inner_product_param { num_output: 4 } }
    layer { name: 'test_only' type: 'InnerProduct' bottom: 'x' top: 'b'
            include { phase: TEST } inner_product_param { num_output: 4 } }
    layer { name: 'staged' type: 'InnerProduct' bottom: 'x' top: 'c'
            include { stage: 'extra' } inner_product_param { num_output: 4 } }
    layer { name: 'not_staged' type: 'InnerProduct' bottom: 'x' top: 'd'
            exclude { stage: 'extra' } inner_product_param { num_output: 4 } }
    layer { name: 'high_level' type: 'InnerProduct' bottom: 'x' top: 'e'
            include { min_level: 2 } inner_product_param { num_output: 4 } }
    layer { name: 'silence' type: 'Silence' bottom: 'y' }
  )";
  auto train = MakeNet(text, TRAIN);
  EXPECT_TRUE(Has(train->layer_names(), "train_only"));
  EXPECT_FALSE(Has(train->layer_names(), "test_only"));
  EXPECT_FALSE(Has(train->layer_names(), "staged"));
  EXPECT_TRUE(Has(train->layer_names(), "not_staged"));
  EXPECT_FALSE(Has(train->layer_names(), "high_level"));
  auto test = MakeNet(text, TEST, {"extra"}, 3);
  EXPECT_FALSE(Has(test->layer_names(), "train_only"));
  EXPECT_TRUE(Has(test->layer_names(), "test_only"));
  EXPECT_TRUE(Has(test->layer_names(), "staged"));
  EXPECT_FALSE(Has(test->layer_names(), "not_staged"));
  EXPECT_TRUE(Has(test->layer_names(), "high_level"));
}

TEST(NetTest, SplitInsertedForSharedBottomAndGradientsAdd) {
  auto net = MakeNet(string(kInputAndIp) + R"(
    force_backward: true
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'p1'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'x' top: 'p2'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'l1' type: 'EuclideanLoss' bottom: 'p1' bottom: 'y' top: 'l1' }
    layer { name: 'l2' type: 'EuclideanLoss' bottom: 'p2' bottom: 'y' top: 'l2' }
  )");
  // One split after 'x' (two readers) and one after 'y' (two readers).
  int splits = 0;
  for (const auto& layer : net->layers()) splits += string(layer->type()) == "Split";
  EXPECT_EQ(splits, 2);
  FillUniform(net->blob_by_name("x").get(), -1, 1, 1);
  FillUniform(net->blob_by_name("y").get(), -1, 1, 2);
  net->ForwardBackward();
  // d(l1 + l2)/dx = W1^T dp1 + W2^T dp2, computed here from the layers' own top diffs.
  const Blob& x = *net->blob_by_name("x");
  const float* w1 = net->layer_by_name("ip1")->blobs()[0]->cpu_data();
  const float* w2 = net->layer_by_name("ip2")->blobs()[0]->cpu_data();
  const float* d1 = net->blob_by_name("p1")->cpu_diff();
  const float* d2 = net->blob_by_name("p2")->cpu_diff();
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 3; ++k) {
      float expected = 0;
      for (int j = 0; j < 4; ++j) expected += w1[j * 3 + k] * d1[n * 4 + j] + w2[j * 3 + k] * d2[n * 4 + j];
      EXPECT_NEAR(x.cpu_diff()[n * 3 + k], expected, 1e-5);
    }
}

TEST(NetTest, InPlaceLayerSharesTheBlob) {
  auto net = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'h' inner_product_param { num_output: 4 } }
    layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'h' bottom: 'y' top: 'loss' }
  )");
  const int relu = static_cast<int>(std::find(net->layer_names().begin(), net->layer_names().end(), "relu") -
                                    net->layer_names().begin());
  EXPECT_EQ(net->bottom_vecs()[relu][0], net->top_vecs()[relu][0]);
}

TEST(NetTest, SharedWeightsAreOneLearnableParamAndGradientsAccumulate) {
  auto net = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'p1'
            param { name: 'shared_w' } param { name: 'shared_b' }
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'x' top: 'p2'
            param { name: 'shared_w' } param { name: 'shared_b' }
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'l1' type: 'EuclideanLoss' bottom: 'p1' bottom: 'y' top: 'l1' }
    layer { name: 'l2' type: 'EuclideanLoss' bottom: 'p2' bottom: 'y' top: 'l2' }
  )");
  EXPECT_EQ(net->params().size(), 4u);
  EXPECT_EQ(net->learnable_params().size(), 2u);
  EXPECT_EQ(net->param_owners()[2], 0);
  const auto& b1 = net->layer_by_name("ip1")->blobs();
  const auto& b2 = net->layer_by_name("ip2")->blobs();
  EXPECT_EQ(b1[0]->cpu_data(), b2[0]->cpu_data());
  FillUniform(net->blob_by_name("x").get(), -1, 1, 1);
  FillUniform(net->blob_by_name("y").get(), -1, 1, 2);
  net->ClearParamDiffs();
  net->ForwardBackward();
  // Both layers compute the same prediction, so the shared gradient is twice one of them.
  const float* x = net->blob_by_name("x")->cpu_data();
  const float* d1 = net->blob_by_name("p1")->cpu_diff();
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 3; ++k) {
      float one = 0;
      for (int n = 0; n < 2; ++n) one += d1[n * 4 + j] * x[n * 3 + k];
      EXPECT_NEAR(b1[0]->cpu_diff()[j * 3 + k], 2 * one, 1e-5);
    }
}

TEST(NetTest, SharedWeightShapeMismatchIsAnError) {
  const string msg = ErrorOf(string(kInputAndIp) + R"(
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'p1' param { name: 'w' }
            inner_product_param { num_output: 4 } }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'x' top: 'p2' param { name: 'w' }
            inner_product_param { num_output: 5 } }
    layer { name: 's' type: 'Silence' bottom: 'p1' bottom: 'p2' bottom: 'y' }
  )");
  EXPECT_NE(msg.find("shared parameter 'w' has shape 4x3 in layer 'ip1' but 5x3 in layer 'ip2'"),
            string::npos) << msg;
}

TEST(NetTest, BackwardIsPrunedWhereNothingLeadsToALoss) {
  auto net = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'frozen' type: 'InnerProduct' bottom: 'x' top: 'h'
            param { lr_mult: 0 } param { lr_mult: 0 } inner_product_param { num_output: 4 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'h' top: 'p' inner_product_param { num_output: 4 } }
    layer { name: 'side' type: 'InnerProduct' bottom: 'x' top: 'unused' inner_product_param { num_output: 2 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' }
  )");
  auto index = [&](const string& name) {
    return std::find(net->layer_names().begin(), net->layer_names().end(), name) -
           net->layer_names().begin();
  };
  EXPECT_FALSE(net->layer_need_backward()[index("frozen")]);  // lr 0 and input needs none
  EXPECT_TRUE(net->layer_need_backward()[index("ip")]);
  EXPECT_FALSE(net->layer_need_backward()[index("side")]);    // feeds no loss
  EXPECT_FALSE(net->bottom_need_backward()[index("ip")][0]);  // 'h' needs no gradient
  EXPECT_EQ(net->output_blobs().size(), 2u);                  // 'unused' and 'loss'
}

// What the gradient exchange may skip: a blob whose every use has lr_mult 0 (its
// diff is not even computed, as in Caffe), BatchNorm's statistics, and the params of
// a layer that runs no backward.
TEST(NetTest, ParamsWithoutGradientAreKnown) {
  auto net = MakeNet(R"(
    layer { name: 'input' type: 'Input' top: 'x' top: 'y'
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 4 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'x' top: 'xn' }
    layer { name: 'frozen' type: 'InnerProduct' bottom: 'xn' top: 'f'
            param { lr_mult: 0 } param { lr_mult: 1 }
            inner_product_param { num_output: 4 bias_filler { type: 'constant' value: 0.5 } } }
    layer { name: 'shared_a' type: 'InnerProduct' bottom: 'f' top: 'a'
            param { name: 'w' } param { lr_mult: 0 }
            inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }
    layer { name: 'shared_b' type: 'InnerProduct' bottom: 'a' top: 'b'
            param { name: 'w' } inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }
    layer { name: 'side' type: 'InnerProduct' bottom: 'x' top: 'unused' inner_product_param { num_output: 2 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'b' bottom: 'y' top: 'loss' }
  )");
  const vector<bool> receives = net->learnable_param_receives_gradient();
  const vector<bool> statistic = net->learnable_param_is_data_statistic();
  std::map<string, bool> by_name, stat_by_name;
  for (size_t p = 0; p < receives.size(); ++p) {
    by_name[net->learnable_param_names()[p]] = receives[p];
    stat_by_name[net->learnable_param_names()[p]] = statistic[p];
  }
  EXPECT_FALSE(by_name.at("frozen[0]"));
  EXPECT_TRUE(by_name.at("frozen[1]"));
  EXPECT_FALSE(by_name.at("bn[0]"));
  EXPECT_FALSE(by_name.at("bn[1]"));
  EXPECT_FALSE(by_name.at("bn[2]"));
  EXPECT_TRUE(by_name.at("shared_a[0]")) << "one blob for both uses";
  EXPECT_FALSE(by_name.at("shared_a[1]"));
  EXPECT_FALSE(by_name.at("side[0]")) << "feeds no loss, runs no backward";
  EXPECT_TRUE(stat_by_name.at("bn[0]"));
  EXPECT_TRUE(stat_by_name.at("bn[1]"));
  EXPECT_FALSE(stat_by_name.at("bn[2]")) << "the normalizer counts passes, alike on every rank";
  EXPECT_FALSE(stat_by_name.at("frozen[0]"));
  FillUniform(net->blob_by_name("x").get(), -1, 1, 3);
  FillUniform(net->blob_by_name("y").get(), -1, 1, 4);
  net->ClearParamDiffs();
  net->ForwardBackward();
  EXPECT_EQ(net->layer_by_name("frozen")->blobs()[0]->asum_diff(), 0.f);
  EXPECT_GT(net->layer_by_name("frozen")->blobs()[1]->asum_diff(), 0.f);
}

TEST(NetTest, LossWeightsScaleTheObjective) {
  const string base = string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' WEIGHT }
  )";
  auto one = MakeNet(std::string(base).replace(base.find("WEIGHT"), 6, ""));
  auto three = MakeNet(std::string(base).replace(base.find("WEIGHT"), 6, "loss_weight: 3"));
  for (auto* net : {one.get(), three.get()}) {
    FillUniform(net->blob_by_name("x").get(), -1, 1, 1);
    FillUniform(net->blob_by_name("y").get(), -1, 1, 2);
  }
  three->CopyTrainedLayersFrom([&] { NetParameter p; one->ToProto(&p); return p; }());
  const float l1 = one->ForwardBackward();
  const float l3 = three->ForwardBackward();
  EXPECT_NEAR(l3, 3 * l1, 1e-5);
  const auto& g1 = one->learnable_params()[0];
  const auto& g3 = three->learnable_params()[0];
  for (int64_t i = 0; i < g1->count(); ++i) EXPECT_NEAR(g3->cpu_diff()[i], 3 * g1->cpu_diff()[i], 1e-5);
}

TEST(NetTest, WeightsRoundTripThroughCaffemodel) {
  const string text = string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 }
                                  bias_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' }
  )";
  auto a = MakeNet(text);
  NetParameter saved;
  a->ToProto(&saved);
  const string file = MakeTempDir("roundtrip") + "/w.caffemodel";
  WriteProtoToBinaryFile(saved, file);
  NetParameter other_param = ParseNet(text);
  other_param.mutable_state()->set_phase(TRAIN);
  auto b = std::make_shared<Net>(other_param, std::make_shared<Context>(9), "b");
  b->CopyTrainedLayersFrom(file);
  for (size_t p = 0; p < a->learnable_params().size(); ++p)
    for (int64_t i = 0; i < a->learnable_params()[p]->count(); ++i)
      EXPECT_EQ(a->learnable_params()[p]->cpu_data()[i], b->learnable_params()[p]->cpu_data()[i]);
}

TEST(NetTest, WeightShapeMismatchOnLoadNamesLayerAndShapes) {
  auto a = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p' inner_product_param { num_output: 4 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' })");
  auto b = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p' inner_product_param { num_output: 5 } }
    layer { name: 's' type: 'Silence' bottom: 'p' bottom: 'y' })");
  NetParameter saved;
  b->ToProto(&saved);
  const string file = MakeTempDir("mismatch") + "/b.caffemodel";
  WriteProtoToBinaryFile(saved, file);
  try {
    a->CopyTrainedLayersFrom(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'ip' blob 0: the weights have shape 5x3, the net expects 4x3"),
              string::npos) << e.what();
    EXPECT_NE(string(e.what()).find(file), string::npos) << e.what();
  }
}

TEST(NetTest, TruncatedCaffemodelIsAnError) {
  auto a = MakeNet(string(kInputAndIp) + R"(
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p' inner_product_param { num_output: 4 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' })");
  NetParameter saved;
  a->ToProto(&saved);
  string bytes;
  saved.SerializeToString(&bytes);
  const string file = MakeTempDir("truncated") + "/t.caffemodel";
  WriteFileAtomically(file, bytes.substr(0, bytes.size() / 2));
  try {
    a->CopyTrainedLayersFrom(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("truncated or corrupt"), string::npos) << e.what();
  }
}

TEST(NetTest, LegacyInputFieldsBecomeAnInputLayer) {
  auto net = MakeNet(R"(
    input: 'data' input_dim: 2 input_dim: 3 input_dim: 1 input_dim: 1
    layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'p' inner_product_param { num_output: 2 } })");
  EXPECT_EQ(net->layer_names()[0], "input");
  EXPECT_EQ(net->blob_by_name("data")->shape(), (vector<int64_t>{2, 3, 1, 1}));
  ASSERT_EQ(net->input_blobs().size(), 1u);
  EXPECT_EQ(ErrorOf("input: 'data' input_dim: 2 input_dim: 3"),
            "net.prototxt: 1 input(s) need 4 input_dim values, found 2");
}

TEST(NetTest, UnknownLayerTypeListsKnownTypes) {
  const string msg = ErrorOf(string(kInputAndIp) + "layer { name: 'odd' type: 'Convolutional' bottom: 'x' }");
  EXPECT_NE(msg.find("net.prototxt: layer 'odd': unknown layer type 'Convolutional'"), string::npos) << msg;
  EXPECT_NE(msg.find("InnerProduct"), string::npos) << msg;
}

TEST(NetTest, MissingBottomNamesLayerAndBlob) {
  const string msg = ErrorOf(string(kInputAndIp) +
                             "layer { name: 'ip' type: 'InnerProduct' bottom: 'nothere' top: 'p' "
                             "inner_product_param { num_output: 2 } }");
  EXPECT_NE(msg.find("layer 'ip' (InnerProduct): bottom blob 'nothere' is not produced"), string::npos) << msg;
}

TEST(NetTest, DuplicateTopIsAnError) {
  const string msg = ErrorOf(string(kInputAndIp) + R"(
    layer { name: 'a' type: 'InnerProduct' bottom: 'x' top: 'p' inner_product_param { num_output: 2 } }
    layer { name: 'b' type: 'InnerProduct' bottom: 'y' top: 'p' inner_product_param { num_output: 2 } })");
  EXPECT_NE(msg.find("layer 'b': top blob 'p' is produced by more than one layer"), string::npos) << msg;
}

TEST(NetTest, LayerErrorsNameTheNetFile) {
  const string msg = ErrorOf(string(kInputAndIp) +
                             "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p' }");
  EXPECT_EQ(msg.rfind("net.prototxt: layer 'ip' (InnerProduct): ", 0), 0u) << msg;
}

TEST(NetTest, MalformedPrototxtReportsLineAndColumn) {
  const string dir = MakeTempDir("malformed");
  const string file = dir + "/bad.prototxt";
  WriteFileAtomically(file, "name: 'x'\nlayer {\n  name: 'a'\n  type: 'ReLU'\n  bottom 'x'\n}\n");
  NetParameter param;
  try {
    ReadNetParamsFromTextFile(file, &param);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find(file + ":5:10: "), string::npos) << e.what();
  }
  WriteFileAtomically(file, "layer { name: 'a' typo_field: 3 }\n");
  try {
    ReadNetParamsFromTextFile(file, &param);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find(file + ":1:"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("typo_field"), string::npos) << e.what();
  }
}

// The net knows which layer it was building or running; the line comes from that, not
// from reading the name back out of the message (a quote in the name would end it).
TEST(NetTest, LayerErrorsFromAFileNameTheLayersLine) {
  const string dir = MakeTempDir("layer_line");
  const string file = dir + "/net.prototxt";
  WriteFileAtomically(file, string(kInputAndIp) +
                                "layer { name: \"it's\" type: 'InnerProduct'\n"
                                "  bottom: 'x' top: 'p' }\n");
  auto context = std::make_shared<Context>();
  try {
    Net net(file, TRAIN, context);
    FAIL() << "a layer without num_output";
  } catch (const Error& e) {
    EXPECT_EQ(string(e.what()).rfind(file + ":4: layer 'it's' (InnerProduct): ", 0), 0u) << e.what();
    EXPECT_EQ(e.layer(), "it's");
  }
  // At run time: a label out of range in the loss layer of line 8.
  WriteFileAtomically(file, string(kInputAndIp) +
                                "layer { name: 'lab' type: 'Input' top: 'lab'\n"
                                "  input_param { shape { dim: 2 } } }\n"
                                "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                "  inner_product_param { num_output: 3 } }\n"
                                "layer { name: \"lo'ss\" type: 'SoftmaxWithLoss'\n"
                                "  bottom: 'p' bottom: 'lab' top: 'loss' }\n");
  Net net(file, TRAIN, context);
  net.blob_by_name("lab")->mutable_cpu_data()[1] = 7;
  try {
    net.Forward();
    FAIL() << "label 7 of 3 classes";
  } catch (const Error& e) {
    EXPECT_EQ(string(e.what()).rfind(file + ":8: ", 0), 0u) << e.what();
    EXPECT_EQ(e.layer(), "lo'ss");
  }
}

TEST(NetTest, MissingFileIsAnError) {
  NetParameter param;
  try {
    ReadNetParamsFromTextFile("/nonexistent/net.prototxt", &param);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("/nonexistent/net.prototxt: cannot open file"), string::npos);
  }
}

}  // namespace
}  // namespace caffe
