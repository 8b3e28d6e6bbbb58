#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/softmax_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Scores 2 x 3 x 2 (softmax over the 3 channels at each of 2 inner positions) and
// labels 2 x 2; with ignore_label 1 one of the four positions is skipped.
class SoftmaxWithLossLayerTest : public ::testing::Test {
 protected:
  SoftmaxWithLossLayerTest() : scores_({2, 3, 2}), labels_({2, 2}) {
    FillUniform(&scores_, -2, 2);
    const float label[] = {0, 2, 1, 0};
    std::copy(label, label + 4, labels_.mutable_cpu_data());
  }

  // -log softmax at the labelled channel, summed over positions not ignored.
  double NaiveLossSum(int ignore_label) const {
    double sum = 0;
    for (int n = 0; n < 2; ++n) {
      for (int i = 0; i < 2; ++i) {
        const int label = static_cast<int>(labels_.cpu_data()[n * 2 + i]);
        if (label == ignore_label) continue;
        double norm = 0;
        for (int c = 0; c < 3; ++c) {
          norm += std::exp(double(scores_.cpu_data()[(n * 3 + c) * 2 + i]));
        }
        sum -= std::log(std::exp(double(scores_.cpu_data()[(n * 3 + label) * 2 + i])) / norm);
      }
    }
    return sum;
  }

  float RunLoss(const std::string& loss_param_text) {
    SoftmaxWithLossLayer layer(
        ParseLayer("name: 'loss' type: 'SoftmaxWithLoss' " + loss_param_text));
    Blob top;
    layer.SetUp({&scores_, &labels_}, {&top});
    return layer.Forward({&scores_, &labels_}, {&top});
  }

  Blob scores_;
  Blob labels_;
};

}  // namespace

TEST_F(SoftmaxWithLossLayerTest, ForwardMatchesHandValues) {
  Blob scores({2, 3}), labels({2}), top;
  const float x[] = {1, 2, 3, 1, 2, 3};
  std::copy(x, x + 6, scores.mutable_cpu_data());
  labels.mutable_cpu_data()[0] = 2;
  labels.mutable_cpu_data()[1] = 0;
  shared_ptr<Layer> layer =
      LayerRegistry::CreateLayer(ParseLayer("name: 'loss' type: 'SoftmaxWithLoss'"));
  EXPECT_STREQ(layer->type(), "SoftmaxWithLoss");
  layer->SetUp({&scores, &labels}, {&top});
  const float loss = layer->Forward({&scores, &labels}, {&top});
  // -log p = 0.4076059644 and 2.4076059644, averaged over the 2 valid labels.
  EXPECT_NEAR(top.cpu_data()[0], 1.4076059644f, 1e-6);
  EXPECT_NEAR(loss, 1.4076059644f, 1e-6);
  // d/dx = (p - onehot) / 2 with p = (0.0900306, 0.2447285, 0.6652410).
  layer->Backward({&top}, {true, false}, {&scores, &labels});
  const float expected[] = {0.0450153f, 0.1223642f, -0.1673795f,
                            -0.4549847f, 0.1223642f, 0.3326205f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(scores.cpu_diff()[i], expected[i], 1e-6) << i;
}

TEST_F(SoftmaxWithLossLayerTest, NormalizationModes) {
  const double all = NaiveLossSum(-1);
  const double valid = NaiveLossSum(1);
  EXPECT_NEAR(RunLoss(""), all / 4, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { normalization: FULL }"), all / 4, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { normalization: NONE }"), all, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 }"), valid / 3, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalization: VALID }"), valid / 3, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalization: FULL }"), valid / 4, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalization: BATCH_SIZE }"), valid / 2,
              1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalization: NONE }"), valid, 1e-5);
  // Legacy normalize: true means VALID, false means BATCH_SIZE.
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalize: true }"), valid / 3, 1e-5);
  EXPECT_NEAR(RunLoss("loss_param { ignore_label: 1 normalize: false }"), valid / 2, 1e-5);
  // loss_weight scales the returned objective.
  EXPECT_NEAR(RunLoss("loss_weight: 3 loss_param { ignore_label: 1 }"), 3 * valid / 3, 1e-5);
}

TEST_F(SoftmaxWithLossLayerTest, AllLabelsIgnoredGivesZeroLoss) {
  for (int i = 0; i < 4; ++i) labels_.mutable_cpu_data()[i] = 1;
  EXPECT_EQ(RunLoss("loss_param { ignore_label: 1 }"), 0.f);
}

TEST_F(SoftmaxWithLossLayerTest, GradientPerNormalizationMode) {
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    for (bool ignore : {false, true}) {
      LayerParameter param = ParseLayer(std::string("name: 'loss' type: 'SoftmaxWithLoss' "
                                                    "loss_param { normalization: ") +
                                        mode + (ignore ? " ignore_label: 1 }" : " }"));
      SoftmaxWithLossLayer layer(param);
      Blob top;
      GradientChecker checker(1e-2f, 1e-3f);
      checker.CheckGradient(&layer, {&scores_, &labels_}, {&top}, 0);
      EXPECT_EQ(checker.checked(), 12) << mode;
    }
  }
}

TEST_F(SoftmaxWithLossLayerTest, GradientOverInnerAxisWithLossWeight) {
  LayerParameter param = ParseLayer(
      "name: 'loss' type: 'SoftmaxWithLoss' loss_weight: 2.5 softmax_param { axis: 1 }");
  SoftmaxWithLossLayer layer(param);
  Blob top;
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&scores_, &labels_}, {&top}, 0);
  EXPECT_EQ(checker.checked(), 12);
}

TEST_F(SoftmaxWithLossLayerTest, IgnoredPositionsGetNoGradient) {
  SoftmaxWithLossLayer layer(
      ParseLayer("name: 'loss' type: 'SoftmaxWithLoss' loss_param { ignore_label: 1 }"));
  Blob top;
  layer.SetUp({&scores_, &labels_}, {&top});
  layer.Forward({&scores_, &labels_}, {&top});
  layer.Backward({&top}, {true, false}, {&scores_, &labels_});
  // Position n = 1, i = 0 carries label 1.
  for (int c = 0; c < 3; ++c) EXPECT_EQ(scores_.cpu_diff()[(1 * 3 + c) * 2 + 0], 0.f);
  EXPECT_NE(scores_.cpu_diff()[0], 0.f);
}

TEST_F(SoftmaxWithLossLayerTest, SecondTopHoldsProbabilities) {
  SoftmaxWithLossLayer layer(ParseLayer("name: 'loss' type: 'SoftmaxWithLoss'"));
  Blob loss, prob;
  layer.SetUp({&scores_, &labels_}, {&loss, &prob});
  // Only the loss counts toward the objective by default.
  EXPECT_EQ(layer.loss(0), 1.f);
  EXPECT_EQ(layer.loss(1), 0.f);
  const float objective = layer.Forward({&scores_, &labels_}, {&loss, &prob});
  EXPECT_EQ(objective, loss.cpu_data()[0]);
  ASSERT_EQ(prob.shape(), scores_.shape());
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 2; ++i) {
      double norm = 0;
      for (int c = 0; c < 3; ++c) norm += std::exp(double(scores_.cpu_data()[(n * 3 + c) * 2 + i]));
      for (int c = 0; c < 3; ++c) {
        const int k = (n * 3 + c) * 2 + i;
        EXPECT_NEAR(prob.cpu_data()[k], std::exp(double(scores_.cpu_data()[k])) / norm, 1e-6);
      }
    }
  }
}

TEST_F(SoftmaxWithLossLayerTest, LabelOutOfRangeIsAnError) {
  labels_.mutable_cpu_data()[3] = 3;
  SoftmaxWithLossLayer layer(
      ParseLayer("name: 'loss' type: 'SoftmaxWithLoss' bottom: 'score' bottom: 'label'"));
  Blob top;
  layer.SetUp({&scores_, &labels_}, {&top});
  try {
    layer.Forward({&scores_, &labels_}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'loss'"), std::string::npos) << what;
    EXPECT_NE(what.find("label 3 "), std::string::npos) << what;
    EXPECT_NE(what.find("[0, 3)"), std::string::npos) << what;
    EXPECT_NE(what.find("'label'"), std::string::npos) << what;
  }
  labels_.mutable_cpu_data()[3] = -1;
  EXPECT_THROW(layer.Forward({&scores_, &labels_}, {&top}), Error);
  // An ignore_label outside the class range is fine: those positions are skipped.
  SoftmaxWithLossLayer ignoring(ParseLayer(
      "name: 'loss' type: 'SoftmaxWithLoss' loss_param { ignore_label: -1 }"));
  ignoring.SetUp({&scores_, &labels_}, {&top});
  EXPECT_NO_THROW(ignoring.Forward({&scores_, &labels_}, {&top}));
}

TEST_F(SoftmaxWithLossLayerTest, BackwardToLabelsIsAnError) {
  SoftmaxWithLossLayer layer(ParseLayer("name: 'loss' type: 'SoftmaxWithLoss'"));
  Blob top;
  layer.SetUp({&scores_, &labels_}, {&top});
  layer.Forward({&scores_, &labels_}, {&top});
  try {
    layer.Backward({&top}, {true, true}, {&scores_, &labels_});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'loss'"), std::string::npos) << e.what();
  }
}

TEST_F(SoftmaxWithLossLayerTest, LabelCountMismatchIsAnError) {
  Blob labels({2, 3});
  SoftmaxWithLossLayer layer(ParseLayer("name: 'loss' type: 'SoftmaxWithLoss'"));
  Blob top;
  EXPECT_THROW(layer.SetUp({&scores_, &labels}, {&top}), Error);
}

}  // namespace caffe
