#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/accuracy_layer.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Five examples over four classes; the comments give each true class's rank.
class AccuracyLayerTest : public ::testing::Test {
 protected:
  AccuracyLayerTest() : scores_({5, 4}), labels_({5}) {
    const float scores[] = {
        0.1f, 0.9f, 0.0f, 0.0f,  // label 1: best
        0.5f, 0.2f, 0.3f, 0.0f,  // label 2: second
        0.1f, 0.2f, 0.3f, 0.4f,  // label 0: fourth
        0.4f, 0.4f, 0.1f, 0.1f,  // label 0: tied for best
        0.3f, 0.1f, 0.2f, 0.4f,  // label 2: third
    };
    std::copy(scores, scores + 20, scores_.mutable_cpu_data());
    const float labels[] = {1, 2, 0, 0, 2};
    std::copy(labels, labels + 5, labels_.mutable_cpu_data());
  }

  // Runs the layer and returns the overall accuracy (and per class when asked).
  float Run(const std::string& param_text, vector<float>* per_class = nullptr) {
    AccuracyLayer layer(ParseLayer("name: 'acc' type: 'Accuracy' " + param_text));
    Blob top, class_top;
    vector<Blob*> tops{&top};
    if (per_class) tops.push_back(&class_top);
    layer.SetUp({&scores_, &labels_}, tops);
    layer.Forward({&scores_, &labels_}, tops);
    EXPECT_EQ(top.count(), 1);
    if (per_class) {
      per_class->assign(class_top.cpu_data(), class_top.cpu_data() + class_top.count());
    }
    return top.cpu_data()[0];
  }

  Blob scores_;
  Blob labels_;
};

}  // namespace

TEST_F(AccuracyLayerTest, TopOneCountsTiesAsWrong) {
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer("name: 'a' type: 'Accuracy'"));
  EXPECT_STREQ(layer->type(), "Accuracy");
  // Example 0 only: example 3's true class ties with another, which counts as ahead.
  EXPECT_FLOAT_EQ(Run(""), 1.f / 5);
  // All scores equal (an untrained net's constant output): nothing is right.
  std::fill_n(scores_.mutable_cpu_data(), 20, 0.25f);
  EXPECT_FLOAT_EQ(Run(""), 0.f);
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 4 }"), 1.f);
}

TEST_F(AccuracyLayerTest, NaNScoresAreNeverCorrect) {
  float* s = scores_.mutable_cpu_data();
  s[1] = std::nanf("");  // example 0: its own (label 1) score
  s[7] = std::nanf("");  // example 1: another class's score
  // Nothing is correct at top-1 (example 3 is a tie); top-4 counts all but the two
  // NaN rows.
  EXPECT_FLOAT_EQ(Run(""), 0.f);
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 4 }"), 3.f / 5);
  std::fill_n(s, 20, std::nanf(""));
  EXPECT_FLOAT_EQ(Run(""), 0.f);
}

TEST_F(AccuracyLayerTest, TopK) {
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 2 }"), 3.f / 5);
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 3 }"), 4.f / 5);
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 4 }"), 1.f);
}

TEST_F(AccuracyLayerTest, IgnoreLabel) {
  // Ignoring class 0 leaves examples 0, 1, 4, of which only 0 is right at top 1.
  EXPECT_FLOAT_EQ(Run("accuracy_param { ignore_label: 0 }"), 1.f / 3);
  EXPECT_FLOAT_EQ(Run("accuracy_param { ignore_label: 0 top_k: 2 }"), 2.f / 3);
  // An ignore_label outside the class range is allowed and skips those positions.
  labels_.mutable_cpu_data()[2] = -1;
  EXPECT_FLOAT_EQ(Run("accuracy_param { ignore_label: -1 }"), 1.f / 4);
  for (int i = 0; i < 5; ++i) labels_.mutable_cpu_data()[i] = -1;
  EXPECT_FLOAT_EQ(Run("accuracy_param { ignore_label: -1 }"), 0.f);
}

TEST_F(AccuracyLayerTest, PerClassAccuracy) {
  vector<float> per_class;
  EXPECT_FLOAT_EQ(Run("accuracy_param { top_k: 2 }", &per_class), 3.f / 5);
  ASSERT_EQ(per_class.size(), 4u);
  EXPECT_FLOAT_EQ(per_class[0], 1.f / 2);  // examples 2 (miss) and 3 (hit)
  EXPECT_FLOAT_EQ(per_class[1], 1.f);      // example 0
  EXPECT_FLOAT_EQ(per_class[2], 1.f / 2);  // examples 1 (hit) and 4 (miss)
  EXPECT_FLOAT_EQ(per_class[3], 0.f);      // no examples
}

TEST(AccuracyLayerAxisTest, ClassesAlongAnInnerAxis) {
  // Scores 1 x 3 x 2 (classes on axis 1, two spatial positions), labels 1 x 2.
  Blob scores({1, 3, 2}), labels({1, 2}), top;
  const float s[] = {0.1f, 0.8f,   // class 0 at positions 0, 1
                     0.7f, 0.1f,   // class 1
                     0.2f, 0.1f};  // class 2
  std::copy(s, s + 6, scores.mutable_cpu_data());
  labels.mutable_cpu_data()[0] = 1;  // right
  labels.mutable_cpu_data()[1] = 2;  // wrong
  AccuracyLayer layer(ParseLayer("name: 'acc' type: 'Accuracy'"));
  layer.SetUp({&scores, &labels}, {&top});
  layer.Forward({&scores, &labels}, {&top});
  EXPECT_FLOAT_EQ(top.cpu_data()[0], 0.5f);
  // The same scores transposed to 1 x 2 x 3 with classes on the last axis.
  Blob last({1, 2, 3});
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 2; ++i) last.mutable_cpu_data()[i * 3 + c] = s[c * 2 + i];
  AccuracyLayer layer_last(ParseLayer("name: 'acc' type: 'Accuracy' accuracy_param { axis: -1 }"));
  layer_last.SetUp({&last, &labels}, {&top});
  layer_last.Forward({&last, &labels}, {&top});
  EXPECT_FLOAT_EQ(top.cpu_data()[0], 0.5f);
}

TEST_F(AccuracyLayerTest, LabelOutOfRangeIsAnError) {
  labels_.mutable_cpu_data()[4] = 4;
  try {
    Run("");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'acc'"), std::string::npos) << what;
    EXPECT_NE(what.find("label 4 "), std::string::npos) << what;
    EXPECT_NE(what.find("[0, 4)"), std::string::npos) << what;
  }
}

TEST_F(AccuracyLayerTest, BadShapesAndParametersAreErrors) {
  EXPECT_THROW(Run("accuracy_param { top_k: 5 }"), Error);
  EXPECT_THROW(Run("accuracy_param { axis: 2 }"), Error);
  labels_.Reshape({4});
  EXPECT_THROW(Run(""), Error);
}

TEST_F(AccuracyLayerTest, BackwardIsAnError) {
  AccuracyLayer layer(ParseLayer("name: 'acc' type: 'Accuracy'"));
  Blob top;
  layer.SetUp({&scores_, &labels_}, {&top});
  layer.Forward({&scores_, &labels_}, {&top});
  EXPECT_NO_THROW(layer.Backward({&top}, {false, false}, {&scores_, &labels_}));
  EXPECT_THROW(layer.Backward({&top}, {true, false}, {&scores_, &labels_}), Error);
}

}  // namespace caffe
