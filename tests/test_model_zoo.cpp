// The project's model definitions (models/*/train_val.prototxt) and the public Caffe
// files in ../shared/compat build and run: every project net under its "synthetic"
// stage, parameter counts against the published figures, compat deploy nets forward,
// compat train/val nets train two iterations with their Data layers swapped for
// DummyData. Real-LMDB runs belong to the data suites.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "caffe/layer_factory.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

string ModelFile(const string& model) {
  return string(CAFFE_SOURCE_DIR) + "/models/" + model + "/train_val.prototxt";
}

// Sets the batch (first dimension) of every DummyData and Input shape; 0 keeps it.
void SetBatch(NetParameter* param, int batch) {
  if (batch <= 0) return;
  for (LayerParameter& layer : *param->mutable_layer()) {
    if (layer.type() == "DummyData") {
      for (BlobShape& shape : *layer.mutable_dummy_data_param()->mutable_shape()) shape.set_dim(0, batch);
    } else if (layer.type() == "Input") {
      for (BlobShape& shape : *layer.mutable_input_param()->mutable_shape()) shape.set_dim(0, batch);
    }
  }
}

NetParameter SyntheticNetParam(const string& model, Phase phase, int batch) {
  NetParameter param;
  ReadNetParamsFromTextFile(ModelFile(model), &param);
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->add_stage("synthetic");
  SetBatch(&param, batch);
  return param;
}

struct ParamCounts {
  int64_t trainable = 0;  // lr_mult != 0: what the solver updates and the exchange sends
  int64_t total = 0;      // plus BatchNorm statistics
};

ParamCounts CountParams(const Net& net) {
  ParamCounts counts;
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    const int64_t n = net.learnable_params()[i]->count();
    counts.total += n;
    if (net.params_lr()[i] != 0.f) counts.trainable += n;
  }
  return counts;
}

bool AllFinite(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

// ---- (a) every project model runs under the synthetic stage ----

struct ModelCase {
  const char* model;
  int classes;
  int batch;  // DummyData batch for the test; 0 keeps the file's
};

// The ImageNet nets run at batch 2 here (their files say 16 and 8) to keep the suite
// within seconds on one core; `caffe time` runs them at the file's batch.
const ModelCase kModels[] = {
    {"lenet_fashion", 10, 0},
    {"resnet20_fashion", 10, 0},
    {"alexnet", 1000, 2},
    {"resnet50", 1000, 2},
};

class ModelZooTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelZooTest, SyntheticStageSwapsDataForDummyData) {
  const ModelCase& c = GetParam();
  NetParameter param;
  ReadNetParamsFromTextFile(ModelFile(c.model), &param);
  for (Phase phase : {TRAIN, TEST}) {
    for (bool synthetic : {false, true}) {
      NetParameter stated = param;
      stated.mutable_state()->set_phase(phase);
      if (synthetic) stated.mutable_state()->add_stage("synthetic");
      NetParameter filtered;
      Net::FilterNet(stated, &filtered);
      int data = 0, dummy = 0;
      for (const LayerParameter& layer : filtered.layer()) {
        data += layer.type() == "Data";
        dummy += layer.type() == "DummyData";
      }
      EXPECT_EQ(data, synthetic ? 0 : 1) << c.model << " phase " << phase;
      EXPECT_EQ(dummy, synthetic ? 1 : 0) << c.model << " phase " << phase;
    }
  }
}

TEST_P(ModelZooTest, SyntheticShapesMatchTheRealData) {
  const ModelCase& c = GetParam();
  NetParameter param;
  ReadNetParamsFromTextFile(ModelFile(c.model), &param);
  const LayerParameter* dummy = nullptr;
  vector<const LayerParameter*> data;
  for (const LayerParameter& layer : param.layer()) {
    if (layer.type() == "DummyData") dummy = &layer;
    if (layer.type() == "Data") data.push_back(&layer);
  }
  ASSERT_NE(dummy, nullptr);
  ASSERT_EQ(data.size(), 2u);
  const BlobShape& image = dummy->dummy_data_param().shape(0);
  ASSERT_EQ(image.dim_size(), 4);
  for (const LayerParameter* layer : data) {
    EXPECT_EQ(layer->data_param().backend(), DataParameter::LMDB);
    EXPECT_EQ(layer->top_size(), 2);
    const int64_t crop = layer->transform_param().crop_size();
    if (crop > 0) {
      EXPECT_EQ(image.dim(2), crop) << c.model;
      EXPECT_EQ(image.dim(3), crop) << c.model;
    }
  }
  // Labels: one per image, drawn from [0, classes).
  ASSERT_EQ(dummy->dummy_data_param().shape(1).dim_size(), 1);
  EXPECT_EQ(dummy->dummy_data_param().shape(1).dim(0), image.dim(0));
  const FillerParameter& labels = dummy->dummy_data_param().data_filler(1);
  EXPECT_EQ(labels.type(), "uniform");
  EXPECT_GE(labels.min(), 0.f);
  EXPECT_LT(labels.max(), c.classes);
  EXPECT_GT(labels.max(), c.classes - 1);
}

// Forward + backward of one synthetic batch; checks the loss, the gradients and, in
// the TEST net, the accuracy.
void RunOnce(Net* net, int classes) {
  net->ClearParamDiffs();
  const float loss = net->ForwardBackward();
  ASSERT_TRUE(std::isfinite(loss));
  // Random init over C classes starts near ln C.
  const float chance = std::log(static_cast<float>(classes));
  EXPECT_GT(loss, 0.5f * chance);
  EXPECT_LT(loss, 2.f * chance);
  double grad = 0;
  for (Blob* blob : net->learnable_params()) {
    ASSERT_TRUE(AllFinite(blob->cpu_diff(), blob->count()));
    for (int64_t i = 0; i < blob->count(); ++i) grad += std::fabs(blob->cpu_diff()[i]);
  }
  EXPECT_GT(grad, 0.0) << "no gradient reached the weights";
  if (net->phase() == TEST) {
    const string name = net->has_blob("accuracy") ? "accuracy" : "accuracy_top1";
    ASSERT_TRUE(net->has_blob(name));
    const float accuracy = net->blob_by_name(name)->cpu_data()[0];
    EXPECT_GE(accuracy, 0.f);
    EXPECT_LE(accuracy, 1.f);
  }
}

TEST_P(ModelZooTest, TrainAndTestNetsRunForwardBackward) {
  const ModelCase& c = GetParam();
  auto context = std::make_shared<Context>();
  Net train(SyntheticNetParam(c.model, TRAIN, c.batch), context, ModelFile(c.model));
  {
    SCOPED_TRACE(string(c.model) + " TRAIN");
    RunOnce(&train, c.classes);
  }
  // As in a solver, the TEST net shares the TRAIN net's weights, BatchNorm statistics
  // included: those of a net that never ran in TRAIN are all zero, and zero variance
  // multiplies activations by 1/sqrt(eps) per BatchNorm, overflowing deep nets.
  Net test(SyntheticNetParam(c.model, TEST, c.batch), context, ModelFile(c.model));
  test.ShareTrainedLayersWith(train);
  SCOPED_TRACE(string(c.model) + " TEST");
  RunOnce(&test, c.classes);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelZooTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return string(info.param.model);
                         });

// Each model's solver_dense.prototxt names its own net and builds a solver on it. The
// Fashion-MNIST solvers also train two iterations (synthetic stage, train and test).
TEST_P(ModelZooTest, DenseSolverBuildsAndSteps) {
  const ModelCase& c = GetParam();
  const string solver_file =
      string(CAFFE_SOURCE_DIR) + "/models/" + c.model + "/solver_dense.prototxt";
  SolverParameter param;
  ReadSolverParamsFromTextFile(solver_file, &param);
  EXPECT_EQ(param.net(), string("models/") + c.model + "/train_val.prototxt");
  EXPECT_FALSE(param.has_sync_param() && param.sync_param().method() != SyncParameter::DENSE);
  EXPECT_GT(param.max_iter(), 0);
  ASSERT_EQ(param.test_iter_size(), 1);
  EXPECT_GT(param.test_iter(0), 0);
  // The net path is relative to the repository root; tests run elsewhere.
  param.clear_net();
  NetParameter net_param;
  ReadNetParamsFromTextFile(ModelFile(c.model), &net_param);
  SetBatch(&net_param, c.batch);
  *param.mutable_net_param() = net_param;
  param.mutable_train_state()->add_stage("synthetic");
  param.add_test_state()->add_stage("synthetic");
  param.set_solver_mode(SolverParameter::CPU);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_display(0);
  param.set_test_iter(0, 1);
  param.set_test_initialization(false);
  param.set_max_iter(2);
  param.set_test_interval(2);
  shared_ptr<Solver> solver =
      SolverRegistry::CreateSolver(param, std::make_shared<Context>(), solver_file);
  ASSERT_EQ(solver->test_nets().size(), 1u);
  if (c.classes > 10) return;  // ImageNet schedules: building is the check
  solver->Solve();
  EXPECT_EQ(solver->iter(), 2);
  EXPECT_TRUE(std::isfinite(solver->smoothed_loss()));
  ASSERT_FALSE(solver->last_test_scores().empty());
  for (const auto& score : solver->last_test_scores()) {
    EXPECT_TRUE(std::isfinite(score.second)) << score.first;
  }
}

// Each model's solver_iwp.prototxt is its dense solver plus a valid IWP sync_param.
TEST_P(ModelZooTest, IwpSolverMatchesTheDenseOneAndIsValid) {
  const ModelCase& c = GetParam();
  const string dir = string(CAFFE_SOURCE_DIR) + "/models/" + c.model;
  SolverParameter dense, iwp;
  ReadSolverParamsFromTextFile(dir + "/solver_dense.prototxt", &dense);
  ReadSolverParamsFromTextFile(dir + "/solver_iwp.prototxt", &iwp);
  ASSERT_TRUE(iwp.has_sync_param());
  EXPECT_EQ(iwp.sync_param().method(), SyncParameter::IWP);
  EXPECT_NO_THROW(ValidateSyncParameter(iwp.sync_param(), dir + "/solver_iwp.prototxt"));
  EXPECT_EQ(iwp.net(), dense.net());
  EXPECT_EQ(iwp.test_iter(0), dense.test_iter(0));
}

// ---- (b) parameter counts: the figures the READMEs quote ----

ParamCounts ModelParams(const string& model) {
  Net net(SyntheticNetParam(model, TRAIN, 1), std::make_shared<Context>(), ModelFile(model));
  return CountParams(net);
}

TEST(ModelZooParamsTest, AlexNetHasThePublishedCount) {
  const ParamCounts counts = ModelParams("alexnet");
  EXPECT_EQ(counts.trainable, 60965224);
  EXPECT_EQ(counts.total, 60965224);
}

TEST(ModelZooParamsTest, ResNet50HasThePublishedCount) {
  const ParamCounts counts = ModelParams("resnet50");
  // 25,557,032: convolutions, fc1000, and BN's gamma/beta (here the Scale layers).
  EXPECT_EQ(counts.trainable, 25557032);
  // Plus mean and variance of 26,560 channels and one normalizer per BatchNorm (53).
  EXPECT_EQ(counts.total, 25557032 + 2 * 26560 + 53);
}

TEST(ModelZooParamsTest, FashionNetsHaveTheDocumentedCounts) {
  EXPECT_EQ(ModelParams("lenet_fashion").trainable, 431080);
  const ParamCounts resnet20 = ModelParams("resnet20_fashion");
  EXPECT_EQ(resnet20.trainable, 272186);
  EXPECT_EQ(resnet20.total, 272186 + 2 * 784 + 21);
}

// ---- (c) compat deploy nets run forward at batch 1 ----

// Weights a deploy file has no fillers for: He-scaled Gaussians, so activations stay
// finite through deep ReLU stacks, and BatchNorm statistics of a unit Gaussian.
void FillDeployWeights(Net* net) {
  uint64_t seed = 1;
  for (const shared_ptr<Layer>& layer : net->layers()) {
    vector<shared_ptr<Blob>>& blobs = layer->blobs();
    const string type = layer->type();
    if (type == "Convolution" || type == "InnerProduct") {
      const int64_t fan_in = blobs[0]->count() / blobs[0]->shape(0);
      FillGaussian(blobs[0].get(), std::sqrt(2.f / fan_in), seed++);
      if (blobs.size() > 1) FillUniform(blobs[1].get(), -0.01f, 0.01f, seed++);
    } else if (type == "BatchNorm") {
      math::set(blobs[0]->count(), 0.f, blobs[0]->mutable_cpu_data());
      math::set(blobs[1]->count(), 1.f, blobs[1]->mutable_cpu_data());
      math::set(blobs[2]->count(), 1.f, blobs[2]->mutable_cpu_data());
    }
  }
}

void CheckDeployNet(const string& file, int expected_layers_min) {
  NetParameter param;
  ReadNetParamsFromTextFile(file, &param);
  ASSERT_EQ(param.layer(0).type(), "Input") << file;
  SetBatch(&param, 1);
  param.mutable_state()->set_phase(TEST);
  Net net(param, std::make_shared<Context>(), file);
  EXPECT_GE(static_cast<int>(net.layers().size()), expected_layers_min);
  FillDeployWeights(&net);
  ASSERT_EQ(net.input_blobs().size(), 1u);
  Blob* data = net.blob_by_name("data").get();
  ASSERT_EQ(data->shape(0), 1);
  FillUniform(data, -1.f, 1.f, 7);
  const vector<Blob*>& outputs = net.Forward();
  ASSERT_EQ(outputs.size(), 1u);
  const Blob* prob = outputs[0];
  ASSERT_EQ(prob->shape(), (vector<int64_t>{1, 1000}));
  ASSERT_TRUE(AllFinite(prob->cpu_data(), prob->count()));
  double sum = 0;
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < prob->count(); ++i) {
    const float p = prob->cpu_data()[i];
    EXPECT_GE(p, 0.f);
    sum += p;
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  EXPECT_NEAR(sum, 1.0, 1e-4);
  EXPECT_GT(hi, lo) << "the output ignores its input";
}

TEST(CompatDeployTest, AlexNetDeployRunsAtBatchOne) {
  const string dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/compat is absent";
  CheckDeployNet(dir + "/bvlc_alexnet__deploy.prototxt", 20);
}

TEST(CompatDeployTest, ResNet50DeployWithLegacyInputsRunsAtBatchOne) {
  const string dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/compat is absent";
  CheckDeployNet(dir + "/kaiminghe__ResNet-50-deploy.prototxt", 200);
}

// ---- (d) compat train/val nets train with DummyData in place of Data ----

struct CompatTrainCase {
  const char* net_file;
  const char* solver_file;  // "" : the inline solver below
  vector<int64_t> image_shape;  // C, H, W
  int classes;
};

// Each Data layer becomes a DummyData layer with the same name, tops and rules.
void ReplaceDataLayers(NetParameter* param, int batch, const vector<int64_t>& image_shape,
                       int classes) {
  int replaced = 0;
  for (LayerParameter& layer : *param->mutable_layer()) {
    if (layer.type() != "Data") continue;
    LayerParameter dummy;
    dummy.set_name(layer.name());
    dummy.set_type("DummyData");
    for (const string& top : layer.top()) dummy.add_top(top);
    *dummy.mutable_include() = layer.include();
    *dummy.mutable_exclude() = layer.exclude();
    DummyDataParameter* dp = dummy.mutable_dummy_data_param();
    BlobShape* image = dp->add_shape();
    image->add_dim(batch);
    for (int64_t d : image_shape) image->add_dim(d);
    FillerParameter* pixels = dp->add_data_filler();
    pixels->set_type("uniform");
    pixels->set_min(-1);
    pixels->set_max(1);
    if (layer.top_size() > 1) {
      dp->add_shape()->add_dim(batch);
      FillerParameter* labels = dp->add_data_filler();
      labels->set_type("uniform");
      labels->set_min(0);
      labels->set_max(classes - 0.001f);
    }
    layer = dummy;
    ++replaced;
  }
  EXPECT_EQ(replaced, 2) << "expected a TRAIN and a TEST Data layer";
}

class CompatTrainTest : public ::testing::TestWithParam<CompatTrainCase> {};

TEST_P(CompatTrainTest, TrainsTwoIterationsOnDummyData) {
  const string dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/compat is absent";
  const CompatTrainCase& c = GetParam();
  const string net_file = dir + "/" + c.net_file;
  NetParameter net_param;
  ReadNetParamsFromTextFile(net_file, &net_param);
  // Crop sizes in the file, where there are any, must agree with the table.
  for (const LayerParameter& layer : net_param.layer()) {
    if (layer.type() == "Data" && layer.transform_param().crop_size() > 0) {
      EXPECT_EQ(layer.transform_param().crop_size(), c.image_shape[1]) << net_file;
    }
  }
  ReplaceDataLayers(&net_param, 2, c.image_shape, c.classes);

  SolverParameter solver_param;
  if (*c.solver_file) {
    ReadSolverParamsFromTextFile(dir + "/" + c.solver_file, &solver_param);
  } else {
    // cifar10_quick's own solver is not among the fixtures; its settings, inline.
    solver_param = ParseSolver(
        "base_lr: 0.001 momentum: 0.9 weight_decay: 0.004 lr_policy: 'fixed' "
        "max_iter: 4000 test_iter: 100 test_interval: 500");
  }
  solver_param.clear_net();
  solver_param.clear_train_net();
  *solver_param.mutable_net_param() = net_param;
  solver_param.set_max_iter(2);
  solver_param.set_solver_mode(SolverParameter::CPU);
  solver_param.set_snapshot(0);
  solver_param.set_snapshot_after_train(false);
  solver_param.set_display(0);
  solver_param.set_random_seed(5);
  // One test pass of one batch at the end, so the TEST-phase net runs too.
  solver_param.clear_test_iter();
  solver_param.add_test_iter(1);
  solver_param.set_test_interval(2);
  solver_param.set_test_initialization(false);

  shared_ptr<Solver> solver =
      SolverRegistry::CreateSolver(solver_param, std::make_shared<Context>(), net_file);
  ASSERT_EQ(solver->test_nets().size(), 1u);
  const Net& net = *solver->net();
  vector<vector<float>> before;
  for (Blob* blob : net.learnable_params()) {
    before.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  solver->Solve();
  EXPECT_EQ(solver->iter(), 2);
  EXPECT_TRUE(std::isfinite(solver->smoothed_loss()));
  EXPECT_GT(solver->smoothed_loss(), 0.f);
  int changed = 0, trainable = 0;
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    const Blob* blob = net.learnable_params()[i];
    ASSERT_TRUE(AllFinite(blob->cpu_data(), blob->count()));
    if (net.params_lr()[i] == 0.f) continue;
    ++trainable;
    for (int64_t j = 0; j < blob->count(); ++j) {
      if (blob->cpu_data()[j] != before[i][j]) {
        ++changed;
        break;
      }
    }
  }
  EXPECT_EQ(changed, trainable) << "every trainable blob should have moved";
  EXPECT_FALSE(solver->last_test_scores().empty());
  for (const auto& score : solver->last_test_scores()) {
    EXPECT_TRUE(std::isfinite(score.second)) << score.first;
  }
}

const CompatTrainCase kCompatTrainNets[] = {
    {"bvlc_alexnet__train_val.prototxt", "bvlc_alexnet__solver.prototxt", {3, 227, 227}, 1000},
    // CaffeNet's solver is not among the fixtures; AlexNet's is the same schedule.
    {"bvlc_reference_caffenet__train_val.prototxt", "bvlc_alexnet__solver.prototxt",
     {3, 227, 227}, 1000},
    {"bvlc_mnist__lenet_train_test.prototxt", "bvlc_mnist__lenet_solver.prototxt", {1, 28, 28}, 10},
    {"bvlc_cifar10__cifar10_quick_train_test.prototxt", "", {3, 32, 32}, 10},
    {"bvlc-intel_default_resnet_50__train_val.prototxt",
     "bvlc-intel_default_resnet_50__solver.prototxt", {3, 224, 224}, 1000},
};

INSTANTIATE_TEST_SUITE_P(Compat, CompatTrainTest, ::testing::ValuesIn(kCompatTrainNets),
                         [](const ::testing::TestParamInfo<CompatTrainCase>& info) {
                           string name = info.param.net_file;
                           name = name.substr(0, name.find('.'));
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// ---- docs/layers.md lists every registered layer type ----

TEST(LayerDocsTest, EveryRegisteredTypeIsDocumented) {
  const string doc = ReadFileToString(string(CAFFE_SOURCE_DIR) + "/docs/layers.md");
  const vector<string> types = LayerRegistry::LayerTypeList();
  ASSERT_GT(types.size(), 40u);
  for (const string& type : types) {
    EXPECT_NE(doc.find("| `" + type + "` |"), string::npos)
        << "docs/layers.md has no row for layer type " << type;
  }
}

}  // namespace
}  // namespace caffe
