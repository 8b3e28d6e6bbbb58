// Net::PlanChannelBlockedLayouts: activations between oneDNN convolutions stay in the
// convolutions' channel-blocked layout. Training must give the plain net's losses and
// weights bit for bit, the blocked blobs must really hold the blocked layout, and the
// plan must leave plain every blob a plain-only layer, the caller or the net's ends
// read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "test_util.hpp"

#ifdef USE_DNNL

namespace caffe {
namespace {

// A residual block and a plain one, with convolutions on oneDNN:
//   conv1 -> bn1 -> sc1 -> relu1 (in place on c1; the Scale folds into the BatchNorm)
//   c1 -> conv2 -> bn2 -> sc2 (in place, folded);  sum = c1 + c2 -> relu2
//   sum -> conv3 -> bn3 -> sc3 (writes s3: not folded) -> relu3 -> conv4
//   c4 -> global average pooling -> ip -> loss
// c1 (and its Split's tops), c2 and sum form one region between convolutions, c3 and
// s3 another; data and c4 (read by pooling) stay plain.
string ResidualNet(const string& bn_param = "", const string& extra = "") {
  const string conv_engine = " engine: DNNL weight_filler { type: 'msra' } ";
  return extra + R"(
    name: 'blocked'
    layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'
            dummy_data_param { shape { dim: 4 dim: 3 dim: 9 dim: 9 } shape { dim: 4 }
                               data_filler { type: 'gaussian' std: 1 }
                               data_filler { type: 'constant' value: 1 } } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'c1'
            convolution_param { num_output: 16 kernel_size: 3 pad: 1 )" + conv_engine + R"( } }
    layer { name: 'bn1' type: 'BatchNorm' bottom: 'c1' top: 'c1' )" + bn_param + R"( }
    layer { name: 'sc1' type: 'Scale' bottom: 'c1' top: 'c1'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.4 max: 2.5 }
                          bias_filler { type: 'uniform' min: -0.5 max: 0.5 } } }
    layer { name: 'relu1' type: 'ReLU' bottom: 'c1' top: 'c1' }
    layer { name: 'conv2' type: 'Convolution' bottom: 'c1' top: 'c2'
            convolution_param { num_output: 16 kernel_size: 3 pad: 1 )" + conv_engine + R"( } }
    layer { name: 'bn2' type: 'BatchNorm' bottom: 'c2' top: 'c2' )" + bn_param + R"( }
    layer { name: 'sc2' type: 'Scale' bottom: 'c2' top: 'c2'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.4 max: 2.5 } } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'c1' bottom: 'c2' top: 'sum' }
    layer { name: 'relu2' type: 'ReLU' bottom: 'sum' top: 'sum' }
    layer { name: 'conv3' type: 'Convolution' bottom: 'sum' top: 'c3'
            convolution_param { num_output: 16 kernel_size: 3 pad: 1 stride: 2 )" + conv_engine + R"( } }
    layer { name: 'bn3' type: 'BatchNorm' bottom: 'c3' top: 'c3' )" + bn_param + R"( }
    layer { name: 'sc3' type: 'Scale' bottom: 'c3' top: 's3'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.4 max: 2.5 } } }
    layer { name: 'relu3' type: 'ReLU' bottom: 's3' top: 's3' }
    layer { name: 'conv4' type: 'Convolution' bottom: 's3' top: 'c4'
            convolution_param { num_output: 16 kernel_size: 1 )" + conv_engine + R"( } }
    layer { name: 'pool' type: 'Pooling' bottom: 'c4' top: 'pool'
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'out'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'label' top: 'loss' }
  )";
}

// As `caffe train` sets the net up, with or without the layout plan.
Net::ChannelLayoutPlan SetUpAsCaffeTrain(Solver* solver, bool layouts, const std::set<string>& keep = {}) {
  Net* net = solver->net().get();
  net->ShareActivationDiffs();
  net->FoldChannelScales();
  return layouts ? net->PlanChannelBlockedLayouts(keep) : Net::ChannelLayoutPlan();
}

void ExpectBitwiseEqualParams(const Net& a, const Net& b) {
  ASSERT_EQ(a.params().size(), b.params().size());
  for (size_t p = 0; p < a.params().size(); ++p) {
    const Blob& x = *a.params()[p];
    const Blob& y = *b.params()[p];
    ASSERT_EQ(x.count(), y.count());
    for (int64_t i = 0; i < x.count(); ++i) {
      ASSERT_EQ(x.cpu_data()[i], y.cpu_data()[i]) << "param " << p << " element " << i;
    }
  }
}

// Trains both nets `steps` steps; their losses and every parameter (BatchNorm's
// statistics included) must agree bit for bit.
void ExpectSameTraining(const string& net_text, int steps) {
  auto plain = MakeSgdSolver(net_text);
  auto blocked = MakeSgdSolver(net_text);
  SetUpAsCaffeTrain(plain.get(), false);
  const Net::ChannelLayoutPlan plan = SetUpAsCaffeTrain(blocked.get(), true);
  ASSERT_GT(plan.blobs, 0) << "nothing was planned: the test would prove nothing";
  for (int step = 0; step < steps; ++step) {
    const float plain_loss = plain->net()->ForwardBackward();
    const float blocked_loss = blocked->net()->ForwardBackward();
    ASSERT_TRUE(std::isfinite(plain_loss)) << "step " << step;
    ASSERT_EQ(plain_loss, blocked_loss) << "step " << step;
    plain->Step(1);
    blocked->Step(1);
  }
  ExpectBitwiseEqualParams(*plain->net(), *blocked->net());
}

TEST(ChannelBlockedLayoutTest, PlansTheRegionsBetweenConvolutionsOnly) {
  auto solver = MakeSgdSolver(ResidualNet());
  const Net::ChannelLayoutPlan plan = SetUpAsCaffeTrain(solver.get(), true);
  ASSERT_TRUE(plan.skipped.empty()) << plan.skipped;
  ASSERT_TRUE(plan.block == 8 || plan.block == 16)
      << "oneDNN's convolutions on this CPU compute in block " << plan.block;
  EXPECT_EQ(plan.regions, 2);
  const Net& net = *solver->net();
  for (const char* name : {"c1", "c2", "sum", "c3", "s3"}) {
    EXPECT_EQ(net.blob_by_name(name)->channel_block(), plan.block) << name;
  }
  // Read by the data layer, pooling, InnerProduct and the loss: plain.
  for (const char* name : {"data", "label", "c4", "pool", "out", "loss"}) {
    EXPECT_EQ(net.blob_by_name(name)->channel_block(), 0) << name;
  }
}

TEST(ChannelBlockedLayoutTest, BlockedBlobsHoldThePlainValuesInTheBlockedOrder) {
  auto plain = MakeSgdSolver(ResidualNet());
  auto blocked = MakeSgdSolver(ResidualNet());
  SetUpAsCaffeTrain(plain.get(), false);
  const int block = SetUpAsCaffeTrain(blocked.get(), true).block;
  ASSERT_GT(block, 0);
  plain->net()->Forward();
  blocked->net()->Forward();
  for (const char* name : {"sum", "s3"}) {
    const Blob& a = *plain->net()->blob_by_name(name);
    const Blob& b = *blocked->net()->blob_by_name(name);
    ASSERT_EQ(b.channel_block(), block);
    const int64_t channels = a.shape(1), spatial = a.count(2);
    int64_t moved = 0;
    for (int64_t n = 0; n < a.shape(0); ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t plain_index = (n * channels + c) * spatial + s;
          const int64_t blocked_index = ((n * channels / block + c / block) * spatial + s) * block + c % block;
          ASSERT_EQ(a.cpu_data()[plain_index], b.cpu_data()[blocked_index])
              << name << " at " << n << ", " << c << ", " << s;
          moved += plain_index != blocked_index && a.cpu_data()[plain_index] != b.cpu_data()[plain_index];
        }
      }
    }
    EXPECT_GT(moved, 0) << name << " is laid out as the plain blob is";
  }
}

TEST(ChannelBlockedLayoutTest, TrainingMatchesThePlainNetBitwise) {
  ExpectSameTraining(ResidualNet(), 3);
}

TEST(ChannelBlockedLayoutTest, UnderGlobalStatisticsTrainingMatchesBitwise) {
  // eps 1: the statistics start at zero, and 1 / sqrt(0 + eps) must not blow up.
  ExpectSameTraining(ResidualNet("batch_norm_param { use_global_stats: true eps: 1 }"), 3);
}

// A test net, as `caffe train` sets one up: the trained weights and BatchNorm
// statistics shared from the train net, the values' memory plan, then the layout plan.
// Its outputs must be the plain test net's, bit for bit.
TEST(ChannelBlockedLayoutTest, ATestNetGivesThePlainOutputsBitwise) {
  auto solver = MakeSgdSolver(ResidualNet());
  solver->Step(2);  // statistics away from zero
  NetParameter param = ParseNet(ResidualNet());
  param.mutable_state()->set_phase(TEST);
  // Contexts of their own with one seed: both draw the same DummyData batches.
  Net plain(param, std::make_shared<Context>());
  Net blocked(param, std::make_shared<Context>());
  for (Net* net : {&plain, &blocked}) {
    net->ShareTrainedLayersWith(*solver->net());
    net->ShareActivationData();
  }
  ASSERT_GT(blocked.PlanChannelBlockedLayouts().blobs, 0);
  float plain_loss = 0.f, blocked_loss = 0.f;
  const Blob& a = *plain.Forward(&plain_loss)[0];
  const Blob& b = *blocked.Forward(&blocked_loss)[0];
  ASSERT_TRUE(std::isfinite(plain_loss));
  EXPECT_EQ(plain_loss, blocked_loss);
  ASSERT_EQ(a.count(), b.count());
  for (int64_t i = 0; i < a.count(); ++i) EXPECT_EQ(a.cpu_data()[i], b.cpu_data()[i]) << i;
}

TEST(ChannelBlockedLayoutTest, AKeptBlobLeavesItsRegionPlain) {
  auto solver = MakeSgdSolver(ResidualNet());
  const Net::ChannelLayoutPlan plan = SetUpAsCaffeTrain(solver.get(), true, {"s3"});
  EXPECT_EQ(plan.regions, 1);
  EXPECT_EQ(solver->net()->blob_by_name("s3")->channel_block(), 0);
  EXPECT_EQ(solver->net()->blob_by_name("c3")->channel_block(), 0);
  EXPECT_GT(solver->net()->blob_by_name("c1")->channel_block(), 0);
  auto other = MakeSgdSolver(ResidualNet());
  const string error = ErrorOf([&] { SetUpAsCaffeTrain(other.get(), true, {"no_such_blob"}); });
  EXPECT_NE(error.find("no blob 'no_such_blob' to keep in the plain layout"), string::npos) << error;
}

TEST(ChannelBlockedLayoutTest, APlainOnlyReaderLeavesItsRegionPlain) {
  // A Sigmoid on the sum joins nothing: the whole first region must stay plain.
  string text = ResidualNet();
  text.insert(text.find("    layer { name: 'conv3'"),
              "    layer { name: 'probe' type: 'Sigmoid' bottom: 'sum' top: 'probe' }\n");
  auto solver = MakeSgdSolver(text);
  const Net::ChannelLayoutPlan plan = SetUpAsCaffeTrain(solver.get(), true);
  EXPECT_EQ(plan.regions, 1);
  for (const char* name : {"c1", "c2", "sum"}) {
    EXPECT_EQ(solver->net()->blob_by_name(name)->channel_block(), 0) << name;
  }
  EXPECT_GT(solver->net()->blob_by_name("s3")->channel_block(), 0);
  ExpectSameTraining(text, 2);
}

TEST(ChannelBlockedLayoutTest, NothingIsPlannedUnderDebugInfo) {
  auto solver = MakeSgdSolver(ResidualNet("", "debug_info: true"));
  const Net::ChannelLayoutPlan plan = SetUpAsCaffeTrain(solver.get(), true);
  EXPECT_EQ(plan.blobs, 0);
  EXPECT_EQ(plan.skipped, "debug_info is set");
}

}  // namespace
}  // namespace caffe

#endif  // USE_DNNL
