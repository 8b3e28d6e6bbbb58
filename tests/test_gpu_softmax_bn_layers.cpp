// GPU paths of Softmax, SoftmaxWithLoss and BatchNorm against their CPU paths
// (ExpectGpuMatchesCpu), plus finite-difference gradient checks in GPU mode. Softmax
// over every axis position (inner > 1 and inner == 1); SoftmaxWithLoss in every
// normalization mode with and without ignore_label, with the probability top, over
// spatial labels, and with an out-of-range label (the same error as on the CPU);
// BatchNorm with batch statistics (the running statistics must come out identical to
// the CPU's, pass after pass) and with global statistics.
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/softmax_layer.hpp"
#include "caffe/layers/softmax_loss_layer.hpp"
#include "gpu_test_support.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// ---- Softmax ----

LayerParameter SoftmaxParam(int axis) {
  LayerParameter param = ParseLayer("name: 'sm' type: 'Softmax'");
  param.mutable_softmax_param()->set_axis(axis);
  return param;
}

TEST(GpuSoftmaxTest, MatchesCpuOnEveryAxis) {
  SKIP_WITHOUT_GPU();
  GpuComparison options;
  options.fill_bottom = [](int, Blob* bottom) { FillUniform(bottom, -5, 5, 13); };
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ExpectGpuMatchesCpu(SoftmaxParam(axis), {{3, 5, 4, 2}}, options);
  }
  // N x C scores, the common classification case (inner == 1).
  ExpectGpuMatchesCpu(SoftmaxParam(1), {{4, 1000}}, options);
}

TEST(GpuSoftmaxTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  for (int axis : {1, -1}) {
    Blob bottom({2, 3, 2}), top;
    FillUniform(&bottom, -2, 2);
    SoftmaxLayer layer(SoftmaxParam(axis));
    layer.set_context(MakeGpuContext());
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), 12);
  }
}

// ---- SoftmaxWithLoss ----

// Labels in [0, channels) on the given softmax axis, with some equal to `ignore` when
// that is in range; bottom 1 is the label blob.
GpuComparison LossComparison(int64_t channels) {
  GpuComparison options;
  options.propagate_down = {true, false};
  options.fill_bottom = [channels](int index, Blob* bottom) {
    if (index == 0) {
      FillUniform(bottom, -3, 3, 17);
      return;
    }
    for (int64_t i = 0; i < bottom->count(); ++i) {
      bottom->mutable_cpu_data()[i] = static_cast<float>((i * 5 + 1) % channels);
    }
  };
  return options;
}

LayerParameter LossParam(const std::string& text) {
  return ParseLayer("name: 'loss' type: 'SoftmaxWithLoss' " + text);
}

TEST(GpuSoftmaxWithLossTest, MatchesCpuInEveryNormalizationMode) {
  SKIP_WITHOUT_GPU();
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    for (bool ignore : {false, true}) {
      const std::string text = std::string("loss_param { normalization: ") + mode +
                               (ignore ? " ignore_label: 1 }" : " }");
      SCOPED_TRACE(text);
      // Scores 4 x 3 x 5: softmax over 3 channels at 5 inner positions.
      ExpectGpuMatchesCpu(LossParam(text), {{4, 3, 5}, {4, 5}}, LossComparison(3));
    }
  }
}

TEST(GpuSoftmaxWithLossTest, MatchesCpuWithProbabilityTopAndSpatialLabels) {
  SKIP_WITHOUT_GPU();
  // Dense prediction: N x C x H x W scores, N x H x W labels, loss weight 2.5.
  ExpectGpuMatchesCpu(
      LossParam("loss_weight: 2.5 loss_param { ignore_label: 2 } softmax_param { axis: 1 }"),
      {{2, 4, 3, 5}, {2, 3, 5}}, LossComparison(4));
  // The probabilities as a second top (no loss weight of its own).
  ExpectGpuMatchesCpu(LossParam("top: 'loss' top: 'prob'"), {{6, 10}, {6}}, LossComparison(10));
  // Every label ignored: zero loss and zero gradient on both sides.
  GpuComparison all_ignored = LossComparison(3);
  all_ignored.fill_bottom = [](int index, Blob* bottom) {
    if (index == 0) {
      FillUniform(bottom, -3, 3, 19);
    } else {
      for (int64_t i = 0; i < bottom->count(); ++i) bottom->mutable_cpu_data()[i] = 1;
    }
  };
  ExpectGpuMatchesCpu(LossParam("loss_param { ignore_label: 1 }"), {{4, 3}, {4}}, all_ignored);
}

TEST(GpuSoftmaxWithLossTest, OutOfRangeLabelGivesTheCpuError) {
  SKIP_WITHOUT_GPU();
  std::string messages[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    Blob scores({2, 3}), labels({2}), top;
    FillUniform(&scores, -1, 1);
    labels.mutable_cpu_data()[0] = 1;
    labels.mutable_cpu_data()[1] = 3;
    SoftmaxWithLossLayer layer(LossParam(""));
    if (gpu) layer.set_context(MakeGpuContext());
    layer.SetUp({&scores, &labels}, {&top});
    try {
      layer.Forward({&scores, &labels}, {&top});
      ADD_FAILURE() << "no error for label 3 of 3 classes (gpu " << gpu << ")";
    } catch (const Error& e) {
      messages[gpu] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("outside the valid range [0, 3)"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[1], messages[0]);
}

TEST(GpuSoftmaxWithLossTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    Blob scores({2, 3, 2}), labels({2, 2}), top;
    FillUniform(&scores, -2, 2);
    const float label[] = {0, 2, 1, 0};
    std::copy(label, label + 4, labels.mutable_cpu_data());
    SoftmaxWithLossLayer layer(
        LossParam(std::string("loss_param { ignore_label: 1 normalization: ") + mode + " }"));
    layer.set_context(MakeGpuContext());
    GradientChecker checker(1e-2f, 1e-3f);
    checker.CheckGradient(&layer, {&scores, &labels}, {&top}, 0);
    EXPECT_EQ(checker.checked(), 12) << mode;
  }
}

// ---- BatchNorm ----

TEST(GpuBatchNormTest, TrainMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const LayerParameter param = ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN");
  ExpectGpuMatchesCpu(param, {{4, 3, 5, 6}});
  ExpectGpuMatchesCpu(param, {{7, 5}});        // no spatial axes
  ExpectGpuMatchesCpu(param, {{2, 600, 1, 1}});  // many channels, one value per item
}

// With batch statistics every forward folds the batch into the three statistics blobs;
// after several passes they must hold exactly the CPU's values.
TEST(GpuBatchNormTest, RunningStatisticsIdenticalToCpu) {
  SKIP_WITHOUT_GPU();
  for (const vector<int64_t>& shape : {vector<int64_t>{4, 3, 5, 6}, vector<int64_t>{9, 4}}) {
    const LayerParameter param = ParseLayer(
        "name: 'bn' type: 'BatchNorm' phase: TRAIN "
        "batch_norm_param { moving_average_fraction: 0.9 eps: 0.001 }");
    BatchNormLayer cpu(param), gpu(param);
    gpu.set_context(MakeGpuContext());
    Blob cpu_bottom(shape), gpu_bottom(shape), cpu_top, gpu_top;
    cpu.SetUp({&cpu_bottom}, {&cpu_top});
    gpu.SetUp({&gpu_bottom}, {&gpu_top});
    for (int pass = 0; pass < 3; ++pass) {
      FillUniform(&cpu_bottom, -2.f + pass, 3.f, 100 + pass);
      std::copy(cpu_bottom.cpu_data(), cpu_bottom.cpu_data() + cpu_bottom.count(),
                gpu_bottom.mutable_cpu_data());
      cpu.Forward({&cpu_bottom}, {&cpu_top});
      gpu.Forward({&gpu_bottom}, {&gpu_top});
    }
    for (int b = 0; b < 3; ++b) {
      const Blob& expected = *cpu.blobs()[b];
      const Blob& actual = *gpu.blobs()[b];
      for (int64_t i = 0; i < expected.count(); ++i) {
        EXPECT_EQ(actual.cpu_data()[i], expected.cpu_data()[i])
            << "shape " << ShapeToString(shape) << " statistics blob " << b << " element " << i;
      }
    }
  }
}

// A bottom with no channels (e.g. {4, 0}) launches no block, yet each pass with batch
// statistics still folds into the normalizer on the CPU (normalizer * maf + 1); the
// device path used to return before that and leave it at 0.
TEST(GpuBatchNormTest, ZeroChannelsStillCountThePass) {
  SKIP_WITHOUT_GPU();
  const LayerParameter param = ParseLayer(
      "name: 'bn' type: 'BatchNorm' phase: TRAIN batch_norm_param { moving_average_fraction: 0.9 }");
  BatchNormLayer cpu(param), gpu(param);
  gpu.set_context(MakeGpuContext());
  Blob cpu_bottom({4, 0}), gpu_bottom({4, 0}), cpu_top, gpu_top;
  cpu.SetUp({&cpu_bottom}, {&cpu_top});
  gpu.SetUp({&gpu_bottom}, {&gpu_top});
  for (int pass = 0; pass < 3; ++pass) {
    cpu.Forward({&cpu_bottom}, {&cpu_top});
    gpu.Forward({&gpu_bottom}, {&gpu_top});
    EXPECT_EQ(gpu.blobs()[2]->cpu_data()[0], cpu.blobs()[2]->cpu_data()[0]) << "pass " << pass;
  }
  EXPECT_GT(cpu.blobs()[2]->cpu_data()[0], 2.f);
}

// Global statistics (either phase): the blobs are read, never written, and the
// normalizer divides them out; a zero normalizer means zeros.
TEST(GpuBatchNormTest, GlobalStatsMatchCpu) {
  SKIP_WITHOUT_GPU();
  for (float normalizer : {2.f, 0.f}) {
    const LayerParameter param = ParseLayer(
        "name: 'bn' type: 'BatchNorm' phase: TRAIN batch_norm_param { use_global_stats: true }");
    BatchNormLayer cpu(param), gpu(param);
    gpu.set_context(MakeGpuContext());
    Blob cpu_bottom({2, 3, 4, 5}), gpu_bottom({2, 3, 4, 5}), cpu_top, gpu_top;
    FillUniform(&cpu_bottom, -1, 1, 23);
    std::copy(cpu_bottom.cpu_data(), cpu_bottom.cpu_data() + cpu_bottom.count(),
              gpu_bottom.mutable_cpu_data());
    cpu.SetUp({&cpu_bottom}, {&cpu_top});
    gpu.SetUp({&gpu_bottom}, {&gpu_top});
    const vector<vector<float>> stats{{0.2f, -0.4f, 1.f}, {1.f, 0.5f, 2.f}, {normalizer}};
    for (BatchNormLayer* layer : {&cpu, &gpu}) {
      for (int b = 0; b < 3; ++b) {
        std::copy(stats[b].begin(), stats[b].end(), layer->blobs()[b]->mutable_cpu_data());
      }
    }
    cpu.Forward({&cpu_bottom}, {&cpu_top});
    gpu.Forward({&gpu_bottom}, {&gpu_top});
    for (int64_t i = 0; i < cpu_top.count(); ++i) {
      EXPECT_NEAR(gpu_top.cpu_data()[i], cpu_top.cpu_data()[i], 1e-5f) << "top " << i;
    }
    Blob noise(cpu_top.shape());
    FillGaussian(&noise, 1.f, 31);
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), cpu_top.mutable_cpu_diff());
    std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), gpu_top.mutable_cpu_diff());
    cpu.Backward({&cpu_top}, {true}, {&cpu_bottom});
    gpu.Backward({&gpu_top}, {true}, {&gpu_bottom});
    for (int64_t i = 0; i < cpu_bottom.count(); ++i) {
      EXPECT_NEAR(gpu_bottom.cpu_diff()[i], cpu_bottom.cpu_diff()[i], 1e-5f) << "diff " << i;
    }
    for (int b = 0; b < 3; ++b) {
      for (size_t i = 0; i < stats[b].size(); ++i) {
        EXPECT_EQ(gpu.blobs()[b]->cpu_data()[i], stats[b][i]) << "blob " << b << " changed";
      }
    }
  }
}

TEST(GpuBatchNormTest, GradientOnGpu) {
  SKIP_WITHOUT_GPU();
  for (const vector<int64_t>& shape : {vector<int64_t>{3, 2, 2, 3}, vector<int64_t>{5, 4}}) {
    Blob bottom(shape), top;
    FillUniform(&bottom, -1, 1);
    BatchNormLayer layer(ParseLayer("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
    layer.set_context(MakeGpuContext());
    GradientChecker checker(1e-3f, 5e-3f);
    checker.CheckGradient(&layer, {&bottom}, {&top});
    EXPECT_EQ(checker.checked(), bottom.count());
  }
}

}  // namespace
}  // namespace caffe
