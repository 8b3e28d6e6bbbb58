#include <gtest/gtest.h>

#include <cmath>

#include "caffe/layers/infogain_loss_layer.hpp"
#include "caffe/layers/multinomial_logistic_loss_layer.hpp"
#include "caffe/util/io.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Writes a classes x classes infogain matrix as a binary BlobProto; returns the path.
string WriteInfogain(const Blob& h, const string& name) {
  BlobProto proto;
  h.ToProto(&proto);
  const string path = MakeTempDir("infogain_loss") + "/" + name;
  WriteProtoToBinaryFile(proto, path);
  return path;
}

Blob* RandomInfogain(int classes, uint64_t seed) {
  Blob* h = new Blob({1, 1, classes, classes});
  FillUniform(h, 0, 1, seed);
  return h;
}

string ProtoWithSource(const string& source, const string& extra = "") {
  return "name: 'i' type: 'InfogainLoss' infogain_loss_param { source: '" + source + "' " +
         extra + "}";
}

// -sum over predictions of sum_k H[label, k] log p_k, classes on `axis` of a 3-d blob,
// and the number of non-ignored predictions.
double NaiveLoss(const Blob& p, const Blob& labels, const Blob& h, int axis, int64_t* valid) {
  const int64_t outer = p.count(0, axis), classes = p.shape(axis), inner = p.count(axis + 1);
  double loss = 0;
  *valid = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float label = labels.cpu_data()[o * inner + i];
      if (label < 0) continue;
      for (int64_t k = 0; k < classes; ++k) {
        loss -= h.cpu_data()[static_cast<int>(label) * classes + k] *
                std::log(p.cpu_data()[(o * classes + k) * inner + i]);
      }
      ++*valid;
    }
  return loss;
}

}  // namespace

TEST(InfogainLossLayerTest, ForwardFromSourceFileAndFromThirdBottomAgree) {
  std::unique_ptr<Blob> h(RandomInfogain(4, 3));
  const string path = WriteInfogain(*h, "h.binaryproto");
  Blob p({3, 4}), labels({3}), top;
  FillUniform(&p, 0.05f, 1);
  const float l[] = {3, 0, 1};
  std::copy(l, l + 3, labels.mutable_cpu_data());
  int64_t valid;
  const double expected = NaiveLoss(p, labels, *h, 1, &valid) / 3;

  InfogainLossLayer from_file(ParseLayer(ProtoWithSource(path)));
  from_file.SetUp({&p, &labels}, {&top});
  EXPECT_NEAR(from_file.Forward({&p, &labels}, {&top}), expected, 1e-5);

  InfogainLossLayer from_bottom(ParseLayer("name: 'i' type: 'InfogainLoss'"));
  from_bottom.SetUp({&p, &labels, h.get()}, {&top});
  EXPECT_NEAR(from_bottom.Forward({&p, &labels, h.get()}, {&top}), expected, 1e-5);
}

TEST(InfogainLossLayerTest, IdentityMatrixGivesMultinomialLogisticLoss) {
  Blob h({5, 5});
  for (int i = 0; i < 5; ++i) h.mutable_cpu_data()[i * 5 + i] = 1;
  Blob p({4, 5}), labels({4}), top;
  FillUniform(&p, 0.05f, 1);
  const float l[] = {0, 4, 2, 2};
  std::copy(l, l + 4, labels.mutable_cpu_data());
  InfogainLossLayer infogain(ParseLayer("name: 'i' type: 'InfogainLoss'"));
  infogain.SetUp({&p, &labels, &h}, {&top});
  const float a = infogain.Forward({&p, &labels, &h}, {&top});
  MultinomialLogisticLossLayer mlr(ParseLayer("name: 'm' type: 'MultinomialLogisticLoss'"));
  mlr.SetUp({&p, &labels}, {&top});
  EXPECT_NEAR(a, mlr.Forward({&p, &labels}, {&top}), 1e-6);
}

TEST(InfogainLossLayerTest, ClassesAlongAnAxisWithIgnoredLabels) {
  std::unique_ptr<Blob> h(RandomInfogain(3, 5));
  Blob p({2, 3, 4}), labels({2, 4}), top;  // classes on axis 1, 4 positions each
  FillUniform(&p, 0.05f, 1);
  const float l[] = {0, 2, -1, 1, 1, -1, 0, 2};
  std::copy(l, l + 8, labels.mutable_cpu_data());
  int64_t valid;
  const double sum = NaiveLoss(p, labels, *h, 1, &valid);
  ASSERT_EQ(valid, 6);
  InfogainLossLayer layer(ParseLayer(
      "name: 'i' type: 'InfogainLoss' loss_param { ignore_label: -1 } "
      "infogain_loss_param { axis: 1 }"));
  layer.SetUp({&p, &labels, h.get()}, {&top});
  EXPECT_NEAR(layer.Forward({&p, &labels, h.get()}, {&top}), sum / 6, 1e-5);
}

TEST(InfogainLossLayerTest, Gradient) {
  std::unique_ptr<Blob> h(RandomInfogain(3, 5));
  const string path = WriteInfogain(*h, "grad.binaryproto");
  Blob p({2, 3, 2}), labels({2, 2}), top;
  FillUniform(&p, 0.3f, 1);
  const float l[] = {0, 2, -1, 1};
  std::copy(l, l + 4, labels.mutable_cpu_data());
  InfogainLossLayer layer(ParseLayer(
      "name: 'i' type: 'InfogainLoss' loss_param { ignore_label: -1 } "
      "infogain_loss_param { source: '" + path + "' axis: 1 }"));
  GradientChecker checker(1e-2f, 2e-3f);
  checker.CheckGradient(&layer, {&p, &labels}, {&top}, 0);
  EXPECT_EQ(checker.checked(), 12);
}

TEST(InfogainLossLayerTest, MissingFileIsAnErrorNamingIt) {
  const string path = MakeTempDir("infogain_loss") + "/no_such_matrix.binaryproto";
  Blob p({2, 3}), labels({2}), top;
  InfogainLossLayer layer(ParseLayer(ProtoWithSource(path)));
  try {
    layer.SetUp({&p, &labels}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'i'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find(path), string::npos) << e.what();
  }
}

TEST(InfogainLossLayerTest, MissingSourceIsAnError) {
  Blob p({2, 3}), labels({2}), top;
  InfogainLossLayer layer(ParseLayer("name: 'i' type: 'InfogainLoss'"));
  EXPECT_THROW(layer.SetUp({&p, &labels}, {&top}), Error);
}

TEST(InfogainLossLayerTest, BadShapesAreErrors) {
  std::unique_ptr<Blob> h(RandomInfogain(4, 3));
  Blob p({2, 3}), labels({2}), top;
  InfogainLossLayer layer(ParseLayer("name: 'i' type: 'InfogainLoss'"));
  try {
    layer.SetUp({&p, &labels, h.get()}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("expected 3x3"), string::npos) << e.what();
  }
  std::unique_ptr<Blob> h3(RandomInfogain(3, 3));
  Blob too_many_labels({2, 2});
  EXPECT_THROW(layer.SetUp({&p, &too_many_labels, h3.get()}, {&top}), Error);
  labels.mutable_cpu_data()[0] = 3;  // out of range
  layer.SetUp({&p, &labels, h3.get()}, {&top});
  EXPECT_THROW(layer.Forward({&p, &labels, h3.get()}, {&top}), Error);
}

}  // namespace caffe
