// A basic residual block (Convolution, BatchNorm, Scale, ReLU twice, identity shortcut
// summed by Eltwise) gradient-checked as a whole net: the analytic gradient of the
// net's total loss with respect to the input and every trainable weight against
// central finite differences of that same loss. This covers what per-layer checks
// cannot: in-place BN/Scale chains, the Split that feeds the shortcut and the branch,
// and batch statistics coupling every sample in TRAIN mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "caffe/net.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// relu1 and relu_out write to new tops so their inputs stay visible for kink detection.
const char* kResidualBlock = R"(
  name: 'residual_block'
  force_backward: true
  state { phase: TRAIN }
  layer { name: 'input' type: 'Input' top: 'x' top: 'target'
          input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 }
                        shape { dim: 2 dim: 3 dim: 4 dim: 4 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'x' top: 'conv1'
          convolution_param { num_output: 3 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.3 }
                              bias_filler { type: 'gaussian' std: 0.1 } } }
  layer { name: 'bn1' type: 'BatchNorm' bottom: 'conv1' top: 'conv1'
          batch_norm_param { use_global_stats: false } }
  layer { name: 'scale1' type: 'Scale' bottom: 'conv1' top: 'conv1'
          scale_param { bias_term: true filler { type: 'uniform' min: 0.5 max: 1.5 }
                        bias_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'relu1' }
  layer { name: 'conv2' type: 'Convolution' bottom: 'relu1' top: 'conv2'
          convolution_param { num_output: 3 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'bn2' type: 'BatchNorm' bottom: 'conv2' top: 'conv2'
          batch_norm_param { use_global_stats: false } }
  layer { name: 'scale2' type: 'Scale' bottom: 'conv2' top: 'conv2'
          scale_param { bias_term: true filler { type: 'uniform' min: 0.5 max: 1.5 }
                        bias_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'sum' type: 'Eltwise' bottom: 'x' bottom: 'conv2' top: 'sum'
          eltwise_param { operation: SUM } }
  layer { name: 'relu_out' type: 'ReLU' bottom: 'sum' top: 'out' }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'target' top: 'loss' }
)";

shared_ptr<Net> MakeBlock() {
  auto net = std::make_shared<Net>(ParseNet(kResidualBlock), std::make_shared<Context>(),
                                   "residual_block");
  FillGaussian(net->blob_by_name("x").get(), 1.f, 11);
  FillGaussian(net->blob_by_name("target").get(), 1.f, 12);
  return net;
}

float Loss(Net* net) {
  float loss = 0;
  net->Forward(&loss);
  return loss;
}

// Signs of every ReLU input: a finite difference whose +h or -h pass flips one of
// them straddles a kink and says nothing about the derivative.
vector<bool> ReluSigns(const Net& net) {
  vector<bool> signs;
  for (const char* name : {"conv1", "sum"}) {
    const Blob& blob = *net.blob_by_name(name);
    for (int64_t i = 0; i < blob.count(); ++i) signs.push_back(blob.cpu_data()[i] > 0);
  }
  return signs;
}

struct CheckResult {
  int checked = 0;
  int skipped = 0;
};

// Compares analytic[i] with the central difference of the loss in values[i], for
// every i; restores each value after use.
CheckResult CompareWithFiniteDifferences(Net* net, const string& what, float* values,
                                         const vector<float>& analytic) {
  const float step = 2e-3f;
  CheckResult result;
  const vector<bool> base_signs = (Loss(net), ReluSigns(*net));
  for (size_t i = 0; i < analytic.size(); ++i) {
    const float original = values[i];
    values[i] = original + step;
    const float plus = Loss(net);
    const bool plus_kink = ReluSigns(*net) != base_signs;
    values[i] = original - step;
    const float minus = Loss(net);
    const bool minus_kink = ReluSigns(*net) != base_signs;
    values[i] = original;
    if (plus_kink || minus_kink) {
      ++result.skipped;
      continue;
    }
    const float numeric = (plus - minus) / (2 * step);
    const float scale = std::max({1.f, std::fabs(numeric), std::fabs(analytic[i])});
    EXPECT_NEAR(analytic[i], numeric, 2e-3f * scale) << what << "[" << i << "]";
    ++result.checked;
  }
  return result;
}

TEST(ResidualBlockTest, WithoutTheBranchTheBlockIsReluOfItsInput) {
  shared_ptr<Net> net = MakeBlock();
  // gamma = beta = 0 in the branch's last Scale silences the branch entirely.
  for (auto& blob : net->layer_by_name("scale2")->blobs()) {
    std::fill_n(blob->mutable_cpu_data(), blob->count(), 0.f);
  }
  Loss(net.get());
  const Blob& x = *net->blob_by_name("x");
  const Blob& out = *net->blob_by_name("out");
  ASSERT_EQ(out.shape(), x.shape());
  for (int64_t i = 0; i < x.count(); ++i) {
    EXPECT_EQ(out.cpu_data()[i], std::max(0.f, x.cpu_data()[i])) << i;
  }
}

TEST(ResidualBlockTest, BranchNormalizesPerChannelInTrainMode) {
  shared_ptr<Net> net = MakeBlock();
  Loss(net.get());
  // bn2 and scale2 run in place, so 'conv2' holds gamma * normalized + beta: with batch
  // statistics its per-channel mean over the batch is exactly beta.
  const Blob& branch = *net->blob_by_name("conv2");
  const Blob& beta = *net->layer_by_name("scale2")->blobs()[1];
  const int64_t channels = branch.shape(1), spatial = branch.count(2);
  for (int64_t c = 0; c < channels; ++c) {
    double mean = 0;
    for (int64_t n = 0; n < branch.shape(0); ++n) {
      for (int64_t s = 0; s < spatial; ++s) mean += branch.cpu_data()[(n * channels + c) * spatial + s];
    }
    mean /= branch.shape(0) * spatial;
    EXPECT_NEAR(mean, beta.cpu_data()[c], 1e-4) << "channel " << c;
  }
}

TEST(ResidualBlockTest, NetGradientMatchesFiniteDifferences) {
  shared_ptr<Net> net = MakeBlock();
  net->ClearParamDiffs();
  const float loss = net->ForwardBackward();
  ASSERT_TRUE(std::isfinite(loss));
  ASSERT_GT(loss, 0.f);

  Blob* x = net->blob_by_name("x").get();
  const vector<float> input_grad(x->cpu_diff(), x->cpu_diff() + x->count());
  vector<vector<float>> param_grads;
  for (Blob* blob : net->learnable_params()) {
    param_grads.emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
  }
  // The shortcut alone would give a gradient; the branch must add to it somewhere.
  double input_grad_norm = 0;
  for (float g : input_grad) input_grad_norm += std::fabs(g);
  ASSERT_GT(input_grad_norm, 0.0);

  CheckResult total = CompareWithFiniteDifferences(net.get(), "x", x->mutable_cpu_data(), input_grad);
  int trainable_blobs = 0;
  for (size_t i = 0; i < net->learnable_params().size(); ++i) {
    if (net->params_lr()[i] == 0.f) continue;  // BatchNorm statistics
    ++trainable_blobs;
    const CheckResult r =
        CompareWithFiniteDifferences(net.get(), net->learnable_param_names()[i],
                                     net->learnable_params()[i]->mutable_cpu_data(), param_grads[i]);
    total.checked += r.checked;
    total.skipped += r.skipped;
  }
  // conv1 weight + bias, scale1 gamma + beta, conv2 weight, scale2 gamma + beta.
  EXPECT_EQ(trainable_blobs, 7);
  const int values = 96 + 81 + 3 + 3 + 3 + 81 + 3 + 3;
  EXPECT_EQ(total.checked + total.skipped, values);
  EXPECT_LT(total.skipped, values / 10) << "too many kinks: the check says little";
}

// conv1's bias is followed by BatchNorm, which subtracts the batch mean: the loss
// cannot depend on it, and both gradients must say so.
TEST(ResidualBlockTest, BiasBeforeBatchNormHasNoGradient) {
  shared_ptr<Net> net = MakeBlock();
  net->ClearParamDiffs();
  net->ForwardBackward();
  const Blob& bias = *net->layer_by_name("conv1")->blobs()[1];
  for (int64_t i = 0; i < bias.count(); ++i) EXPECT_NEAR(bias.cpu_diff()[i], 0.f, 1e-5f);
}

}  // namespace
}  // namespace caffe
