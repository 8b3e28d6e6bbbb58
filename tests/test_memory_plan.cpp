// The memory plans (Net::ShareActivationDiffs, Net::ShareActivationData and the
// interval planner under them): training with shared diffs gives bitwise the weights
// of training without, on LeNet, ResNet-20 and a net of in-place layers, Split,
// Concat, Slice, Eltwise, Flatten and shared weights; a forward-only net with shared
// values gives bitwise the same outputs; the plans save memory, leave the blobs they
// must alone, and re-plan after a reshape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/util/buffer_sharing_plan.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// ---- the planner ----

TEST(BufferSharingPlanTest, DisjointUsesShareOneBufferOfTheLargestSize) {
  const BufferSharingPlan plan = PlanSharedBuffers({{100, 0, 1}, {300, 2, 3}, {200, 4, 9}});
  ASSERT_EQ(plan.buffer_bytes.size(), 1u);
  EXPECT_EQ(plan.buffer_bytes[0], 300u);
  EXPECT_EQ(plan.buffer_of, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(plan.bytes_before, 600u);
  EXPECT_EQ(plan.bytes_after, 300u);
}

TEST(BufferSharingPlanTest, UsesAliveInTheSameStepNeverShare) {
  // Use 1 starts in the step use 0 ends: a layer reads one and writes the other.
  const BufferSharingPlan plan = PlanSharedBuffers({{100, 0, 2}, {100, 2, 3}, {100, 1, 1}});
  ASSERT_EQ(plan.buffer_of.size(), 3u);
  EXPECT_NE(plan.buffer_of[0], plan.buffer_of[1]);
  EXPECT_NE(plan.buffer_of[0], plan.buffer_of[2]);
  // Use 2 (step 1) is over before use 1 (steps 2-3) starts.
  EXPECT_EQ(plan.buffer_of[1], plan.buffer_of[2]);
  EXPECT_EQ(plan.bytes_after, 200u);
}

TEST(BufferSharingPlanTest, AUseTakesTheFreeBufferThatFitsItMostTightly) {
  // Two buffers are free at step 2 (sizes 1000 and 120); a 100-byte use takes the
  // 120-byte one, so the 1000-byte one stays for the 900-byte use after it.
  const BufferSharingPlan plan =
      PlanSharedBuffers({{1000, 0, 1}, {120, 0, 1}, {100, 2, 3}, {900, 2, 3}});
  EXPECT_EQ(plan.buffer_of[2], plan.buffer_of[1]);
  EXPECT_EQ(plan.buffer_of[3], plan.buffer_of[0]);
  EXPECT_EQ(plan.bytes_after, 1120u);
}

TEST(BufferSharingPlanTest, AnInvertedIntervalIsAnError) {
  EXPECT_NE(ErrorOf([] { PlanSharedBuffers({{4, 3, 2}}); }).find("ends (step 2) before"),
            std::string::npos);
}

// ---- whole nets ----

// Every structure that aliases or fans out diffs: BatchNorm, Scale and ReLU in place
// on one blob; that blob read by three layers (a Split of three); two convolutions
// sharing weights; Eltwise SUM and PROD; Concat; Slice; Flatten (which shares its
// bottom's diff); TanH in place before the loss.
const char* kStructuresNet = R"(
  name: 'structures'
  layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'
          dummy_data_param { shape { dim: 4 dim: 2 dim: 6 dim: 6 } shape { dim: 4 }
                             data_filler { type: 'gaussian' std: 1 }
                             data_filler { type: 'constant' value: 2 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'c1'
          convolution_param { num_output: 4 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'bn1' type: 'BatchNorm' bottom: 'c1' top: 'c1' }
  layer { name: 'sc1' type: 'Scale' bottom: 'c1' top: 'c1' scale_param { bias_term: true } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'c1' top: 'c1' }
  layer { name: 'conv2a' type: 'Convolution' bottom: 'c1' top: 'a'
          param { name: 'shared_w' } param { name: 'shared_b' }
          convolution_param { num_output: 4 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'conv2b' type: 'Convolution' bottom: 'c1' top: 'b'
          param { name: 'shared_w' } param { name: 'shared_b' }
          convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
  layer { name: 'sum' type: 'Eltwise' bottom: 'a' bottom: 'b' top: 's' }
  layer { name: 'cat' type: 'Concat' bottom: 's' bottom: 'c1' top: 'cat' }
  layer { name: 'slice' type: 'Slice' bottom: 'cat' top: 'half1' top: 'half2'
          slice_param { slice_point: 4 } }
  layer { name: 'prod' type: 'Eltwise' bottom: 'half1' bottom: 'half2' top: 'pr'
          eltwise_param { operation: PROD } }
  layer { name: 'pool' type: 'Pooling' bottom: 'pr' top: 'p'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'flat' type: 'Flatten' bottom: 'p' top: 'f' }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'f' top: 'out'
          inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'tanh' type: 'TanH' bottom: 'out' top: 'out' }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'label' top: 'loss' }
)";

NetParameter ModelNet(const string& model, int batch) {
  NetParameter param;
  ReadNetParamsFromTextFile(string(CAFFE_SOURCE_DIR) + "/models/" + model + "/train_val.prototxt",
                            &param);
  param.mutable_state()->add_stage("synthetic");
  for (LayerParameter& layer : *param.mutable_layer()) {
    if (layer.type() != "DummyData") continue;
    for (BlobShape& shape : *layer.mutable_dummy_data_param()->mutable_shape()) shape.set_dim(0, batch);
  }
  return param;
}

shared_ptr<Solver> MakeSolver(const NetParameter& net) {
  SolverParameter param = ParseSolver(
      "base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' max_iter: 100 "
      "random_seed: 5 display: 0 snapshot_after_train: false");
  *param.mutable_net_param() = net;
  param.mutable_train_state()->MergeFrom(net.state());
  return SolverRegistry::CreateSolver(param, std::make_shared<Context>());
}

vector<vector<float>> Weights(const Net& net) {
  vector<vector<float>> weights;
  for (Blob* blob : net.learnable_params()) {
    weights.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return weights;
}

// Bitwise, not to a tolerance: sharing memory must not change one operation.
void ExpectBitwiseEqual(const vector<vector<float>>& a, const vector<vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    ASSERT_EQ(a[p].size(), b[p].size()) << "param " << p;
    EXPECT_EQ(std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)), 0)
        << "param " << p << " differs";
  }
}

struct NetCase {
  const char* name;
  std::function<NetParameter()> make;
};

void PrintTo(const NetCase& c, std::ostream* os) { *os << c.name; }

class DiffSharingTest : public ::testing::TestWithParam<NetCase> {};

TEST_P(DiffSharingTest, TrainingGivesBitwiseTheSameWeightsAndSavesMemory) {
  const NetParameter net_param = GetParam().make();
  auto plain = MakeSolver(net_param);
  plain->Step(3);

  auto shared = MakeSolver(net_param);
  const Net::ActivationSharing sharing = shared->net()->ShareActivationDiffs();
  EXPECT_TRUE(sharing.skipped.empty()) << sharing.skipped;
  EXPECT_GT(sharing.blobs, 1);
  EXPECT_GT(sharing.buffers, 0);
  EXPECT_LT(sharing.buffers, sharing.blobs);
  EXPECT_LT(sharing.bytes_after, sharing.bytes_before);
  shared->Step(3);

  ExpectBitwiseEqual(Weights(*plain->net()), Weights(*shared->net()));
}

// The nets both plans are checked on.
const NetCase kNets[] = {
    {"structures", [] { return ParseNet(kStructuresNet); }},
    {"lenet", [] { return ModelNet("lenet_fashion", 8); }},
    {"resnet20", [] { return ModelNet("resnet20_fashion", 2); }},
};

string NetCaseName(const ::testing::TestParamInfo<NetCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Nets, DiffSharingTest, ::testing::ValuesIn(kNets), NetCaseName);

// The diffs a caller may read after Backward: kept blobs, the loss, inputs.
TEST(DiffSharingNetTest, KeptBlobsAndTheLossKeepTheirOwnDiffs) {
  NetParameter param = ParseNet(kStructuresNet);
  param.mutable_state()->set_phase(TRAIN);
  auto context = std::make_shared<Context>();
  context->Seed(3);
  Net plain(param, context);
  auto context2 = std::make_shared<Context>();
  context2->Seed(3);
  Net shared(param, context2);
  const Net::ActivationSharing sharing = shared.ShareActivationDiffs({"p", "s"});
  ASSERT_TRUE(sharing.skipped.empty());
  shared.CopyTrainedLayersFrom([&] {
    NetParameter weights;
    plain.ToProto(&weights);
    return weights;
  }());

  // Every blob but the kept ones, the loss and the data may share; those never do.
  std::map<const SyncedMemory*, vector<string>> users;
  for (const string& name : shared.blob_names()) {
    users[shared.blob_by_name(name)->diff().get()].push_back(name);
  }
  for (const char* name : {"s", "loss", "data", "label"}) {
    EXPECT_EQ(users[shared.blob_by_name(name)->diff().get()], vector<string>{name})
        << name << " shares its diff";
  }
  // Flatten's top aliases its bottom's diff, so keeping p keeps f with it.
  EXPECT_EQ(users[shared.blob_by_name("p")->diff().get()], (vector<string>{"p", "f"}));
  EXPECT_GT(sharing.blobs, 4);

  for (Net* net : {&plain, &shared}) {
    net->ClearParamDiffs();
    net->ForwardBackward();
  }
  for (const char* name : {"p", "s", "loss"}) {
    const Blob& a = *plain.blob_by_name(name);
    const Blob& b = *shared.blob_by_name(name);
    ASSERT_EQ(a.count(), b.count());
    EXPECT_EQ(std::memcmp(a.cpu_diff(), b.cpu_diff(), a.count() * sizeof(float)), 0) << name;
  }
}

TEST(DiffSharingNetTest, ForceBackwardAndDebugInfoTurnItOff) {
  for (const char* flag : {"force_backward: true", "debug_info: true"}) {
    NetParameter param = ParseNet(string(kStructuresNet) + flag);
    param.mutable_state()->set_phase(TRAIN);
    Net net(param, std::make_shared<Context>());
    std::set<const SyncedMemory*> before;
    for (const auto& blob : net.blobs()) before.insert(blob->diff().get());
    const Net::ActivationSharing sharing = net.ShareActivationDiffs();
    EXPECT_FALSE(sharing.skipped.empty()) << flag;
    EXPECT_EQ(sharing.blobs, 0) << flag;
    for (const auto& blob : net.blobs()) EXPECT_TRUE(before.count(blob->diff().get())) << flag;
  }
}

TEST(DiffSharingNetTest, AnUnknownKeptBlobIsAnErrorNamingIt) {
  NetParameter param = ParseNet(kStructuresNet);
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, std::make_shared<Context>());
  EXPECT_NE(ErrorOf([&] { net.ShareActivationDiffs({"nope"}); }).find("no blob 'nope'"),
            std::string::npos);
}

// An Input net grown to a larger batch: the layers' reshape gives the grown blobs
// their own memory, and Net::Reshape plans again; gradients still match.
TEST(DiffSharingNetTest, ReshapingToALargerBatchPlansAgain) {
  const char* net_text = R"(
    name: 'grow'
    layer { name: 'in' type: 'Input' top: 'x' top: 'y'
            input_param { shape { dim: 2 dim: 5 } shape { dim: 2 } } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h'
            inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'h2'
            inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'sig' type: 'Sigmoid' bottom: 'h2' top: 'h3' }
    layer { name: 'ip3' type: 'InnerProduct' bottom: 'h3' top: 'z'
            inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'z' bottom: 'y' top: 'loss' }
  )";
  NetParameter param = ParseNet(net_text);
  param.mutable_state()->set_phase(TRAIN);
  auto context = std::make_shared<Context>();
  context->Seed(9);
  Net plain(param, context);
  Net shared(param, context);
  NetParameter weights;
  plain.ToProto(&weights);
  shared.CopyTrainedLayersFrom(weights);
  const Net::ActivationSharing first = shared.ShareActivationDiffs();
  ASSERT_GT(first.blobs, 0);
  for (Net* net : {&plain, &shared}) {
    net->blob_by_name("x")->Reshape({7, 5});
    net->blob_by_name("y")->Reshape({7});
    FillUniform(net->blob_by_name("x").get(), -1, 1, 4);
    float* labels = net->blob_by_name("y")->mutable_cpu_data();
    for (int i = 0; i < 7; ++i) labels[i] = static_cast<float>(i % 3);
    net->Reshape();
    net->ClearParamDiffs();
    net->ForwardBackward();
  }
  // After the re-plan the grown blobs are back in shared buffers that hold them:
  // h3 (read by ip3, written by nothing after sig) and h (ip2 to ip1) never overlap.
  EXPECT_EQ(shared.blob_by_name("h")->diff().get(), shared.blob_by_name("h3")->diff().get());
  for (const auto& blob : shared.blobs()) {
    EXPECT_GE(blob->diff()->size(), static_cast<size_t>(blob->count()) * sizeof(float));
  }
  vector<vector<float>> a, b;
  for (Blob* p : plain.learnable_params()) a.emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
  for (Blob* p : shared.learnable_params()) b.emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
  ExpectBitwiseEqual(a, b);
}

// ---- values of forward-only nets ----

// A TEST-phase net whose BatchNorm layers normalise by the batch (their stored
// statistics are still zero here, which would make every output the same).
NetParameter ForwardOnly(NetParameter param) {
  param.mutable_state()->set_phase(TEST);
  for (LayerParameter& layer : *param.mutable_layer()) {
    if (layer.type() == "BatchNorm") layer.mutable_batch_norm_param()->set_use_global_stats(false);
  }
  return param;
}

class DataSharingTest : public ::testing::TestWithParam<NetCase> {};

TEST_P(DataSharingTest, ForwardGivesBitwiseTheSameOutputsAndSavesMemory) {
  const NetParameter param = ForwardOnly(GetParam().make());
  auto context_a = std::make_shared<Context>();
  context_a->Seed(21);
  auto context_b = std::make_shared<Context>();
  context_b->Seed(21);
  Net plain(param, context_a);
  Net shared(param, context_b);
  const Net::ActivationSharing sharing = shared.ShareActivationData();
  ASSERT_TRUE(sharing.skipped.empty()) << sharing.skipped;
  EXPECT_GT(sharing.blobs, 1);
  EXPECT_LT(sharing.buffers, sharing.blobs);
  EXPECT_LT(sharing.bytes_after, sharing.bytes_before);
  for (int pass = 0; pass < 2; ++pass) {
    float loss_a = 0, loss_b = 0;
    const vector<Blob*>& a = plain.Forward(&loss_a);
    const vector<Blob*>& b = shared.Forward(&loss_b);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i]->count(), b[i]->count());
      for (int64_t k = 0; k < a[i]->count(); ++k) ASSERT_TRUE(std::isfinite(a[i]->cpu_data()[k]));
      EXPECT_EQ(std::memcmp(a[i]->cpu_data(), b[i]->cpu_data(), a[i]->count() * sizeof(float)), 0)
          << "output " << i << " in pass " << pass;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nets, DataSharingTest, ::testing::ValuesIn(kNets), NetCaseName);

TEST(DataSharingNetTest, BackwardAfterSharingValuesIsAnError) {
  Net net(ForwardOnly(ParseNet(kStructuresNet)), std::make_shared<Context>(), "structures.prototxt");
  ASSERT_TRUE(net.ShareActivationData().skipped.empty());
  net.Forward();
  EXPECT_NE(ErrorOf([&] { net.Backward(); }).find("structures.prototxt: this net's activations "
                                                   "share memory between layers"),
            string::npos);
}

TEST(DataSharingNetTest, TheBatchOutputsAndKeptBlobsKeepTheirOwnValues) {
  Net net(ForwardOnly(ParseNet(kStructuresNet)), std::make_shared<Context>());
  ASSERT_TRUE(net.ShareActivationData({"s"}).skipped.empty());
  std::map<const SyncedMemory*, vector<string>> users;
  for (const string& name : net.blob_names()) {
    users[net.blob_by_name(name)->data().get()].push_back(name);
  }
  for (const char* name : {"data", "label", "loss", "s"}) {
    EXPECT_EQ(users[net.blob_by_name(name)->data().get()], vector<string>{name})
        << name << " shares its values";
  }
  // Something else does share.
  size_t most = 0;
  for (const auto& entry : users) most = std::max(most, entry.second.size());
  EXPECT_GT(most, 2u);
}

}  // namespace
}  // namespace caffe
