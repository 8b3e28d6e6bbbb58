// GPU paths of the loss layers (EuclideanLoss, SigmoidCrossEntropyLoss,
// ContrastiveLoss, HingeLoss, InfogainLoss, MultinomialLogisticLoss): each checked
// against its CPU path (loss, and the gradient with the loss top's diff set to 1) for
// every normalization, ignore_label and norm setting, and by a finite-difference
// gradient check run in GPU mode. Label bottoms get integer values in range and no
// gradient. Every test skips (with the reason) where no GPU can run this build's
// kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/util/io.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// Finite-difference check of `param`'s layer in GPU mode through bottom `check_bottom`
// (the prediction); step and threshold as in the layer's CPU test.
void CheckGpuGradient(const LayerParameter& param, const vector<Blob*>& bottoms,
                      float stepsize, float threshold, int check_bottom) {
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  layer->set_context(MakeGpuContext());
  Blob top;
  GradientChecker checker(stepsize, threshold);
  checker.CheckGradient(layer.get(), bottoms, {&top}, check_bottom);
  EXPECT_GT(checker.checked(), 0);
}

// Whole-number values in [lo, hi]: labels (lo = -1 adds ignored ones).
void FillLabels(Blob* blob, int lo, int hi, uint64_t seed) {
  FillUniform(blob, lo, hi + 0.999f, seed);
  float* x = blob->mutable_cpu_data();
  for (int64_t i = 0; i < blob->count(); ++i) x[i] = std::floor(x[i]);
}

// Fills bottom 0 uniformly in [lo, hi] and bottom `label_bottom` with labels in
// [label_lo, label_hi]; other bottoms uniformly in [0, 1].
GpuComparison LabelledComparison(float lo, float hi, int label_bottom, int label_lo,
                                 int label_hi, int num_bottoms) {
  GpuComparison options;
  options.fill_bottom = [=](int i, Blob* bottom) {
    if (i == 0) {
      FillUniform(bottom, lo, hi, 31);
    } else if (i == label_bottom) {
      FillLabels(bottom, label_lo, label_hi, 37);
    } else {
      FillUniform(bottom, 0, 1, 41 + i);
    }
  };
  options.propagate_down.assign(num_bottoms, false);
  options.propagate_down[0] = true;
  return options;
}

// Forward, then Backward into bottom 0 with the loss diff 1, in CPU or GPU mode; returns
// the loss followed by bottom 0's diff.
std::vector<float> LossAndGradient(const LayerParameter& param, const vector<Blob*>& bottoms,
                                   bool gpu) {
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  if (gpu) layer->set_context(MakeGpuContext());
  Blob top;
  layer->SetUp(bottoms, {&top});
  layer->Forward(bottoms, {&top});
  std::vector<float> result{top.cpu_data()[0]};
  top.mutable_cpu_diff()[0] = 1.f;
  vector<bool> propagate_down(bottoms.size(), false);
  propagate_down[0] = true;
  layer->Backward({&top}, propagate_down, bottoms);
  result.insert(result.end(), bottoms[0]->cpu_diff(),
                bottoms[0]->cpu_diff() + bottoms[0]->count());
  return result;
}

// A NaN in the prediction must reach the loss (and the gradient) on the GPU as on the
// CPU, whose std::max clamps keep NaN; fmaxf clamps would make the loss finite and keep
// the solver's non-finite loss check from firing.
void ExpectNaNReachesLossAsOnCpu(const LayerParameter& param, const vector<Blob*>& bottoms) {
  const std::vector<float> cpu = LossAndGradient(param, bottoms, false);
  const std::vector<float> gpu = LossAndGradient(param, bottoms, true);
  ASSERT_TRUE(std::isnan(cpu[0])) << "the CPU loss should be NaN";
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (std::isnan(cpu[i])) {
      EXPECT_TRUE(std::isnan(gpu[i])) << "value " << i << " (0 is the loss, then bottom 0's "
                                      << "diff) is NaN on the CPU, " << gpu[i] << " on the GPU";
    } else {
      EXPECT_NEAR(gpu[i], cpu[i], 1e-4f * std::max(1.f, std::fabs(cpu[i]))) << "value " << i;
    }
  }
}

}  // namespace

// ---- EuclideanLoss ----

TEST(GpuEuclideanLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // Both bottoms take a gradient (opposite signs).
  ExpectGpuMatchesCpu(ParseLayer("name: 'l' type: 'EuclideanLoss'"), {{4, 3, 5}, {4, 15}});
  LayerParameter weighted = ParseLayer("name: 'l' type: 'EuclideanLoss' loss_weight: 2.5");
  GpuComparison only_first;
  only_first.propagate_down = {true, false};
  ExpectGpuMatchesCpu(weighted, {{7, 2}, {7, 2}}, only_first);
}

TEST(GpuEuclideanLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob a({4, 5}), b({4, 5});
  FillUniform(&a, -1, 1, 1);
  FillUniform(&b, -1, 1, 2);
  CheckGpuGradient(ParseLayer("name: 'l' type: 'EuclideanLoss'"), {&a, &b}, 1e-2f, 1e-3f, -1);
}

// ---- SigmoidCrossEntropyLoss ----

TEST(GpuSigmoidCrossEntropyLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string base = "name: 'l' type: 'SigmoidCrossEntropyLoss' ";
  // Targets 0/1, and with ignore_label also -1; every normalization, and the default
  // (batch size), which differs from the other losses.
  for (const char* loss_param :
       {"", "loss_param { normalization: VALID }", "loss_param { normalization: FULL }",
        "loss_param { normalization: NONE }", "loss_param { normalization: BATCH_SIZE }",
        "loss_param { normalize: true }", "loss_param { ignore_label: -1 }",
        "loss_param { ignore_label: -1 normalization: VALID }",
        "loss_param { ignore_label: -1 normalization: FULL }"}) {
    SCOPED_TRACE(loss_param);
    const bool ignoring = std::string(loss_param).find("ignore") != std::string::npos;
    ExpectGpuMatchesCpu(ParseLayer(base + loss_param), {{3, 4, 5}, {3, 4, 5}},
                        LabelledComparison(-4, 4, 1, ignoring ? -1 : 0, 1, 2));
  }
  // All targets ignored: the normalizer stays 1, the loss and gradient 0.
  GpuComparison all_ignored = LabelledComparison(-4, 4, 1, -1, -1, 2);
  ExpectGpuMatchesCpu(ParseLayer(base + "loss_param { ignore_label: -1 normalization: VALID }"),
                      {{2, 3}, {2, 3}}, all_ignored);
}

TEST(GpuSigmoidCrossEntropyLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob x({2, 3, 2}), t({2, 3, 2});
  FillUniform(&x, -4, 4, 1);
  FillLabels(&t, -1, 1, 2);
  CheckGpuGradient(
      ParseLayer("name: 'l' type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 "
                 "normalization: VALID }"),
      {&x, &t}, 1e-2f, 1e-3f, 0);
}

// ---- ContrastiveLoss ----

std::string ContrastiveProto(bool legacy) {
  return std::string("name: 'l' type: 'ContrastiveLoss' contrastive_loss_param { margin: 1.5") +
         (legacy ? " legacy_version: true }" : " }");
}

TEST(GpuContrastiveLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (bool legacy : {false, true}) {
    SCOPED_TRACE(legacy ? "legacy" : "current");
    // Pairs in [-0.5, 0.5]^6: some dissimilar ones inside the margin, some outside.
    GpuComparison options;
    options.fill_bottom = [](int i, Blob* bottom) {
      if (i == 2) {
        FillLabels(bottom, 0, 1, 53);
      } else {
        FillUniform(bottom, -0.5f, 0.5f, 47 + i);
      }
    };
    options.propagate_down = {true, true, false};
    ExpectGpuMatchesCpu(ParseLayer(ContrastiveProto(legacy)), {{16, 6}, {16, 6}, {16}},
                        options);
  }
}

TEST(GpuContrastiveLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (bool legacy : {false, true}) {
    SCOPED_TRACE(legacy ? "legacy" : "current");
    Blob a({5, 3}), b({5, 3}), y({5});
    FillUniform(&a, -0.3f, 0.3f, 1);
    FillUniform(&b, -0.3f, 0.3f, 2);
    const float similar[] = {0, 1, 0, 1, 0};
    std::copy(similar, similar + 5, y.mutable_cpu_data());
    for (int side : {0, 1}) {
      CheckGpuGradient(ParseLayer(ContrastiveProto(legacy)), {&a, &b, &y}, 1e-3f, 1e-3f, side);
    }
  }
}

TEST(GpuContrastiveLossLayerTest, NaNReachesTheLossAsOnCpu) {
  SKIP_WITHOUT_GPU();
  for (bool legacy : {false, true}) {
    SCOPED_TRACE(legacy ? "legacy" : "current");
    Blob a({3, 2}), b({3, 2}), y({3});
    FillUniform(&a, -0.3f, 0.3f, 1);
    FillUniform(&b, -0.3f, 0.3f, 2);
    a.mutable_cpu_data()[1] = std::nanf("");  // pair 0, dissimilar
    const float similar[] = {0, 1, 0};
    std::copy(similar, similar + 3, y.mutable_cpu_data());
    ExpectNaNReachesLossAsOnCpu(ParseLayer(ContrastiveProto(legacy)), {&a, &b, &y});
  }
}

// ---- HingeLoss ----

TEST(GpuHingeLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* norm : {"L1", "L2"}) {
    SCOPED_TRACE(norm);
    // Scores in [-2, 2]: margins on both sides of 0.
    ExpectGpuMatchesCpu(ParseLayer(std::string("name: 'l' type: 'HingeLoss' "
                                               "hinge_loss_param { norm: ") + norm + " }"),
                        {{10, 6}, {10}}, LabelledComparison(-2, 2, 1, 0, 5, 2));
  }
}

TEST(GpuHingeLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  for (const char* norm : {"L1", "L2"}) {
    SCOPED_TRACE(norm);
    Blob x({4, 5}), labels({4});
    FillUniform(&x, -2, 2, 1);
    // Keep every margin 1 -+ x away from the kink at 0.
    float* v = x.mutable_cpu_data();
    for (int i = 0; i < x.count(); ++i) {
      if (std::fabs(std::fabs(v[i]) - 1) < 0.05f) v[i] += 0.1f;
    }
    FillLabels(&labels, 0, 4, 2);
    CheckGpuGradient(ParseLayer(std::string("name: 'l' type: 'HingeLoss' "
                                            "hinge_loss_param { norm: ") + norm + " }"),
                     {&x, &labels}, 1e-2f, 1e-3f, 0);
  }
}

// ---- InfogainLoss ----

TEST(GpuInfogainLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  // H as the third bottom; classes on axis 1 of a 3-d blob (positions along axis 2),
  // with and without ignored labels, in two normalizations.
  for (const char* p : {"infogain_loss_param { axis: 1 }",
                        "loss_param { ignore_label: -1 } infogain_loss_param { axis: 1 }",
                        "loss_param { ignore_label: -1 normalization: BATCH_SIZE } "
                        "infogain_loss_param { axis: 1 }"}) {
    SCOPED_TRACE(p);
    const bool ignoring = std::string(p).find("ignore") != std::string::npos;
    ExpectGpuMatchesCpu(ParseLayer(std::string("name: 'l' type: 'InfogainLoss' ") + p),
                        {{3, 4, 5}, {3, 5}, {4, 4}},
                        LabelledComparison(0.01f, 1, 1, ignoring ? -1 : 0, 3, 3));
  }
  // H from a file, classes on the last axis (inner size 1).
  Blob h({4, 4});
  FillUniform(&h, 0, 1, 61);
  BlobProto proto;
  h.ToProto(&proto);
  const std::string path = MakeTempDir("gpu_infogain_loss") + "/h.binaryproto";
  WriteProtoToBinaryFile(proto, path);
  ExpectGpuMatchesCpu(ParseLayer("name: 'l' type: 'InfogainLoss' infogain_loss_param { "
                                 "source: '" + path + "' }"),
                      {{6, 4}, {6}}, LabelledComparison(0.01f, 1, 1, 0, 3, 2));
}

TEST(GpuInfogainLossLayerTest, NaNReachesTheLossAsOnCpu) {
  SKIP_WITHOUT_GPU();
  Blob p({2, 3}), labels({2}), h({3, 3});
  FillUniform(&p, 0.1f, 1, 1);
  FillUniform(&h, 0.1f, 1, 5);
  p.mutable_cpu_data()[4] = std::nanf("");  // example 1, class 1
  labels.mutable_cpu_data()[0] = 2;
  labels.mutable_cpu_data()[1] = 1;
  ExpectNaNReachesLossAsOnCpu(ParseLayer("name: 'l' type: 'InfogainLoss'"), {&p, &labels, &h});
}

TEST(GpuInfogainLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob p({2, 3, 2}), labels({2, 2}), h({3, 3});
  FillUniform(&p, 0.3f, 1, 1);
  FillUniform(&h, 0, 1, 5);
  const float l[] = {0, 2, -1, 1};
  std::copy(l, l + 4, labels.mutable_cpu_data());
  CheckGpuGradient(ParseLayer("name: 'l' type: 'InfogainLoss' loss_param { ignore_label: -1 } "
                              "infogain_loss_param { axis: 1 }"),
                   {&p, &labels, &h}, 1e-2f, 2e-3f, 0);
}

// ---- MultinomialLogisticLoss ----

TEST(GpuMultinomialLogisticLossLayerTest, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(ParseLayer("name: 'l' type: 'MultinomialLogisticLoss'"),
                      {{8, 5}, {8}}, LabelledComparison(0.01f, 1, 1, 0, 4, 2));
  // Probabilities of 0 meet the clamp.
  GpuComparison with_zeros = LabelledComparison(0.f, 1, 1, 0, 2, 2);
  with_zeros.fill_bottom = [](int i, Blob* bottom) {
    if (i == 1) {
      FillLabels(bottom, 0, 2, 7);
    } else {
      std::fill_n(bottom->mutable_cpu_data(), bottom->count(), 0.f);
    }
  };
  ExpectGpuMatchesCpu(ParseLayer("name: 'l' type: 'MultinomialLogisticLoss'"),
                      {{4, 3, 1, 1}, {4}}, with_zeros);
}

TEST(GpuMultinomialLogisticLossLayerTest, NaNReachesTheLossAsOnCpu) {
  SKIP_WITHOUT_GPU();
  Blob p({3, 4}), labels({3});
  FillUniform(&p, 0.1f, 1, 1);
  const float l[] = {0, 2, 3};
  std::copy(l, l + 3, labels.mutable_cpu_data());
  p.mutable_cpu_data()[1 * 4 + 2] = std::nanf("");  // example 1's labelled class
  ExpectNaNReachesLossAsOnCpu(ParseLayer("name: 'l' type: 'MultinomialLogisticLoss'"),
                              {&p, &labels});
}

TEST(GpuMultinomialLogisticLossLayerTest, Gradient) {
  SKIP_WITHOUT_GPU();
  Blob p({5, 4}), labels({5});
  FillUniform(&p, 0.1f, 1, 1);
  FillLabels(&labels, 0, 3, 2);
  CheckGpuGradient(ParseLayer("name: 'l' type: 'MultinomialLogisticLoss'"), {&p, &labels},
                   1e-2f, 2e-3f, 0);
}

TEST(GpuMultinomialLogisticLossLayerTest, BadLabelIsTheSameError) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<Layer> layer =
      LayerRegistry::CreateLayer(ParseLayer("name: 'l' type: 'MultinomialLogisticLoss'"));
  layer->set_context(MakeGpuContext());
  Blob p({2, 3}), labels({2}), top;
  FillUniform(&p, 0.1f, 1, 1);
  labels.mutable_cpu_data()[0] = 1;
  labels.mutable_cpu_data()[1] = 3;
  layer->SetUp({&p, &labels}, {&top});
  try {
    layer->Forward({&p, &labels}, {&top});
    FAIL() << "label 3 of 3 classes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("example 1"), std::string::npos) << e.what();
  }
}

}  // namespace caffe
