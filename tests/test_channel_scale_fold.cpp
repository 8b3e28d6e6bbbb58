// Net::FoldChannelScales: a Scale in place after a BatchNorm hands its per-channel
// factor to the BatchNorm's backward. Training with the fold must give the gradients
// and weights of training without it (up to float rounding: s * sum(dy) is not
// sum(s * dy) bit for bit), and the fold must apply exactly where it can.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "caffe/layers/scale_layer.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// conv -> BatchNorm -> Scale -> ReLU, all in place on 'c1' (foldable); then a second
// pair whose Scale writes a new blob (not foldable). The scales start away from 1 and
// the biases away from 0, so a fold that dropped the factor would show.
string FoldNet(const string& bn1_param = "") {
  return R"(
    name: 'fold'
    layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'
            dummy_data_param { shape { dim: 4 dim: 2 dim: 6 dim: 6 } shape { dim: 4 }
                               data_filler { type: 'gaussian' std: 1 }
                               data_filler { type: 'constant' value: 1 } } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'c1'
            convolution_param { num_output: 3 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn1' type: 'BatchNorm' bottom: 'c1' top: 'c1' )" +
         bn1_param + R"( }
    layer { name: 'sc1' type: 'Scale' bottom: 'c1' top: 'c1'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.4 max: 2.5 }
                          bias_filler { type: 'uniform' min: -0.5 max: 0.5 } } }
    layer { name: 'relu1' type: 'ReLU' bottom: 'c1' top: 'c1' }
    layer { name: 'conv2' type: 'Convolution' bottom: 'c1' top: 'c2'
            convolution_param { num_output: 3 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn2' type: 'BatchNorm' bottom: 'c2' top: 'c2' }
    layer { name: 'sc2' type: 'Scale' bottom: 'c2' top: 's2'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.4 max: 2.5 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 's2' top: 'out'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'label' top: 'loss' }
  )";
}

// Each parameter within 1e-5 of its blob's largest magnitude, or of a hundredth of
// the largest in any blob where a blob's values are rounding noise (a convolution's
// bias before a BatchNorm has a gradient of 0: it stays within 1e-6 of its start).
void ExpectClose(const vector<Blob*>& a, const vector<Blob*>& b, bool diffs) {
  ASSERT_EQ(a.size(), b.size());
  auto values = [diffs](const Blob* blob) { return diffs ? blob->cpu_diff() : blob->cpu_data(); };
  auto largest_of = [&](const Blob* blob) {
    float largest = 0.f;
    for (int64_t i = 0; i < blob->count(); ++i) largest = std::max(largest, std::fabs(values(blob)[i]));
    return largest;
  };
  float overall = 0.f;
  for (const Blob* blob : a) overall = std::max(overall, largest_of(blob));
  ASSERT_GT(overall, 0.f) << "all zero: the test would prove nothing";
  for (size_t p = 0; p < a.size(); ++p) {
    ASSERT_EQ(a[p]->count(), b[p]->count());
    const float tolerance = 1e-5f * std::max(largest_of(a[p]), 1e-2f * overall);
    for (int64_t i = 0; i < a[p]->count(); ++i) {
      ASSERT_NEAR(values(a[p])[i], values(b[p])[i], tolerance) << "param " << p << " element " << i;
    }
  }
}

const ScaleLayer& ScaleNamed(const Net& net, const string& name) {
  return dynamic_cast<const ScaleLayer&>(*net.layer_by_name(name));
}

TEST(ChannelScaleFoldTest, FoldsOnlyTheScaleInPlaceAfterABatchNorm) {
  auto solver = MakeSgdSolver(FoldNet());
  EXPECT_EQ(solver->net()->FoldChannelScales(), 1);
  EXPECT_TRUE(ScaleNamed(*solver->net(), "sc1").folds_into_producer());
  EXPECT_FALSE(ScaleNamed(*solver->net(), "sc2").folds_into_producer());
}

TEST(ChannelScaleFoldTest, GradientsAndWeightsMatchTheUnfoldedNet) {
  auto plain = MakeSgdSolver(FoldNet());
  auto folded = MakeSgdSolver(FoldNet());
  ASSERT_EQ(folded->net()->FoldChannelScales(), 1);
  const float plain_loss = plain->net()->ForwardBackward();
  const float folded_loss = folded->net()->ForwardBackward();
  // Forward reads the same x_hat and does the same arithmetic.
  EXPECT_EQ(plain_loss, folded_loss);
  ExpectClose(plain->net()->learnable_params(), folded->net()->learnable_params(), true);
  // conv1's gradient passes through the folded pair: the factors were applied.
  const Blob& c1 = *folded->net()->blob_by_name("c1");
  EXPECT_TRUE(std::all_of(c1.cpu_diff(), c1.cpu_diff() + c1.count(),
                          [](float v) { return std::isfinite(v); }));

  plain->Step(4);
  folded->Step(4);
  ExpectClose(plain->net()->learnable_params(), folded->net()->learnable_params(), false);
}

TEST(ChannelScaleFoldTest, WithTheMemoryPlanTooTheWeightsMatch) {
  auto plain = MakeSgdSolver(FoldNet());
  auto planned = MakeSgdSolver(FoldNet());
  planned->net()->ShareActivationDiffs();
  ASSERT_EQ(planned->net()->FoldChannelScales(), 1);
  plain->Step(4);
  planned->Step(4);
  ExpectClose(plain->net()->learnable_params(), planned->net()->learnable_params(), false);
}

TEST(ChannelScaleFoldTest, UnderGlobalStatisticsTheScaleRunsItsOwnPassBitwise) {
  // No kept x_hat to borrow: the pair falls back to two passes, with unchanged results.
  const string bn = "batch_norm_param { use_global_stats: true }";
  auto plain = MakeSgdSolver(FoldNet(bn));
  auto folded = MakeSgdSolver(FoldNet(bn));
  ASSERT_EQ(folded->net()->FoldChannelScales(), 1);
  plain->net()->ForwardBackward();
  folded->net()->ForwardBackward();
  const vector<Blob*>& a = plain->net()->learnable_params();
  const vector<Blob*>& b = folded->net()->learnable_params();
  for (size_t p = 0; p < a.size(); ++p) {
    EXPECT_TRUE(std::equal(a[p]->cpu_diff(), a[p]->cpu_diff() + a[p]->count(), b[p]->cpu_diff()))
        << "param " << p;
  }
}

TEST(ChannelScaleFoldTest, NothingFoldsUnderDebugInfoOrWithOneDnnsBatchNorm) {
  string debug = FoldNet();
  debug.insert(debug.find("name: 'fold'"), "debug_info: true ");
  EXPECT_EQ(MakeSgdSolver(debug)->net()->FoldChannelScales(), 0);
#ifdef USE_DNNL
  EXPECT_EQ(MakeSgdSolver(FoldNet("batch_norm_param { engine: DNNL }"))->net()->FoldChannelScales(), 0);
#endif
}

}  // namespace
}  // namespace caffe
