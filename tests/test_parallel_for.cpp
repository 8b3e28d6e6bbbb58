// ParallelFor (include/caffe/util/parallel_for.hpp): every index is visited exactly
// once whatever the thread count, small ranges stay on one thread, large ones use
// the -threads count; and the layers that use it give bitwise the same forward and
// backward results at 1 and at 2 threads on blobs large enough to be split.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "caffe/common.hpp"
#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/num_threads.hpp"
#include "caffe/util/parallel_for.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(NumThreads()) {}
  ~ThreadCountGuard() { SetNumThreads(saved_); }

 private:
  int saved_;
};

TEST(ParallelForTest, VisitsEveryIndexOnce) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 4}) {
    SetNumThreads(threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, kParallelMinElements - 1,
                      kParallelMinElements, int64_t{100003}, int64_t{1} << 20}) {
      vector<int> hits(n, 0);
      int* h = hits.data();
      ParallelFor(n, [=](int64_t begin, int64_t end) {
        ASSERT_LE(0, begin);
        ASSERT_LE(begin, end);
        for (int64_t i = begin; i < end; ++i) ++h[i];
      });
      int64_t wrong = 0;
      for (int v : hits) wrong += v != 1;
      EXPECT_EQ(wrong, 0) << "n = " << n << ", threads = " << threads;
    }
  }
}

TEST(ParallelForTest, SmallRangesStayOnTheCallingThread) {
  ThreadCountGuard guard;
  SetNumThreads(4);
  EXPECT_EQ(ParallelThreads(kParallelMinElements - 1), 1);
  EXPECT_EQ(ParallelThreads(10, 100), 1);
  std::set<std::thread::id> seen;
  std::mutex mutex;
  ParallelFor(1000, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(*seen.begin(), std::this_thread::get_id());
}

TEST(ParallelForTest, LargeRangesUseTheThreadCount) {
  ThreadCountGuard guard;
  SetNumThreads(1);
  EXPECT_EQ(ParallelThreads(int64_t{1} << 22), 1);
  SetNumThreads(2);
  const int expected = ParallelThreads(int64_t{1} << 22);
  // 2 with OpenMP; 1 in a build without it (then everything runs serially).
  EXPECT_TRUE(expected == 1 || expected == 2) << expected;
  std::set<std::thread::id> seen;
  std::mutex mutex;
  ParallelFor(int64_t{1} << 22, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(static_cast<int>(seen.size()), expected);
  // Never more threads than elements allow: two threads need two half-thresholds.
  EXPECT_EQ(ParallelThreads(kParallelMinElements), expected == 2 ? 2 : 1);
}

struct LayerRun {
  vector<vector<float>> outputs;  // top data, bottom diffs, param diffs, param data
};

// Forward + backward of one layer on fixed inputs at a given thread count.
LayerRun RunLayer(const string& param_text, const vector<vector<int64_t>>& bottom_shapes,
                  bool in_place, int threads) {
  ThreadCountGuard guard;
  SetNumThreads(threads);
  LayerParameter param = ParseLayer(param_text);
  param.set_phase(TRAIN);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  layer->context().Seed(42);
  vector<Blob> bottoms(bottom_shapes.size());
  Blob top_blob;
  vector<Blob*> bottom, top;
  for (size_t i = 0; i < bottoms.size(); ++i) {
    bottoms[i].Reshape(bottom_shapes[i]);
    FillUniform(&bottoms[i], -1.f, 1.f, 10 + i);
    bottom.push_back(&bottoms[i]);
  }
  top.push_back(in_place ? bottom[0] : &top_blob);
  layer->SetUp(bottom, top);
  uint64_t seed = 100;
  for (auto& blob : layer->blobs()) {
    if (std::string(layer->type()) != "BatchNorm") FillUniform(blob.get(), 0.5f, 1.5f, seed++);
    std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.25f);
  }
  layer->Forward(bottom, top);
  LayerRun run;
  run.outputs.emplace_back(top[0]->cpu_data(), top[0]->cpu_data() + top[0]->count());
  Blob dy;
  dy.ReshapeLike(*top[0]);
  FillUniform(&dy, -1.f, 1.f, 77);
  std::copy_n(dy.cpu_data(), dy.count(), top[0]->mutable_cpu_diff());
  layer->Backward(top, vector<bool>(bottom.size(), true), bottom);
  for (Blob* b : bottom) run.outputs.emplace_back(b->cpu_diff(), b->cpu_diff() + b->count());
  for (auto& blob : layer->blobs()) {
    run.outputs.emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
    run.outputs.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return run;
}

void ExpectSameAtOneAndTwoThreads(const string& param_text,
                                  const vector<vector<int64_t>>& bottom_shapes,
                                  bool in_place = false) {
  SCOPED_TRACE(param_text);
  const LayerRun one = RunLayer(param_text, bottom_shapes, in_place, 1);
  const LayerRun two = RunLayer(param_text, bottom_shapes, in_place, 2);
  ASSERT_EQ(one.outputs.size(), two.outputs.size());
  for (size_t k = 0; k < one.outputs.size(); ++k) {
    ASSERT_EQ(one.outputs[k].size(), two.outputs[k].size());
    ASSERT_GT(one.outputs[k].size(), 0u);
    int64_t differ = 0;
    for (size_t i = 0; i < one.outputs[k].size(); ++i) {
      differ += one.outputs[k][i] != two.outputs[k][i];  // bitwise (no NaNs here)
    }
    EXPECT_EQ(differ, 0) << "output " << k << ": " << differ << " elements differ";
  }
}

// 2 x 8 x 48 x 48 = 36,864 elements: above the threshold, so two threads split it.
const vector<int64_t> kLarge = {2, 8, 48, 48};

TEST(ParallelLayersTest, ElementwiseLayersAreThreadCountIndependent) {
  ExpectSameAtOneAndTwoThreads("name: 'r' type: 'ReLU' relu_param { engine: CAFFE }", {kLarge});
  ExpectSameAtOneAndTwoThreads(
      "name: 'r' type: 'ReLU' relu_param { engine: CAFFE negative_slope: 0.1 }", {kLarge}, true);
  ExpectSameAtOneAndTwoThreads("name: 's' type: 'Sigmoid'", {kLarge});
  ExpectSameAtOneAndTwoThreads("name: 't' type: 'TanH'", {kLarge}, true);
  ExpectSameAtOneAndTwoThreads("name: 'd' type: 'Dropout' dropout_param { dropout_ratio: 0.3 }",
                               {kLarge});
  ExpectSameAtOneAndTwoThreads(
      "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 0.5 coeff: -2 coeff: 1 }",
      {kLarge, kLarge, kLarge});
  ExpectSameAtOneAndTwoThreads("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }",
                               {kLarge, kLarge});
}

TEST(ParallelLayersTest, ScaleAndBatchNormAreThreadCountIndependent) {
  ExpectSameAtOneAndTwoThreads("name: 's' type: 'Scale' scale_param { bias_term: true }", {kLarge},
                               true);
  ExpectSameAtOneAndTwoThreads("name: 's' type: 'Scale' scale_param { axis: 1 num_axes: 2 }",
                               {kLarge});
  ExpectSameAtOneAndTwoThreads("name: 'bn' type: 'BatchNorm' batch_norm_param { engine: CAFFE }",
                               {kLarge}, true);
  // Many channels of few elements each: the split is by channel.
  ExpectSameAtOneAndTwoThreads("name: 'bn' type: 'BatchNorm' batch_norm_param { engine: CAFFE }",
                               {{4, 256, 6, 6}});
}

// The exchanges' gather / scatter / accumulate loops: the gradients a step applies
// must not depend on the thread count (ranks may run different counts, and weights
// must stay bitwise identical across ranks).
vector<vector<float>> RunExchange(SyncParameter::Method method, const string& extra, int threads) {
  ThreadCountGuard guard;
  SetNumThreads(threads);
  SyncParameter sync;
  ParseProtoFromText(extra, "<sync>", &sync);
  sync.set_method(method);
  sync.set_density(0.05f);
  sync.set_min_layer_size(1000);
  auto exchange = CreateGradientExchange(sync, std::make_shared<LocalCommunicator>());
  vector<std::unique_ptr<Blob>> blobs;
  vector<Blob*> params;
  for (int64_t n : {200003, 70000, 40}) {
    blobs.push_back(std::make_unique<Blob>(vector<int64_t>{n}));
    FillUniform(blobs.back().get(), -1.f, 1.f, 5 + n);
    params.push_back(blobs.back().get());
  }
  vector<vector<float>> applied;
  for (int step = 0; step < 4; ++step) {
    for (size_t b = 0; b < params.size(); ++b) {
      Blob gradient;
      gradient.ReshapeLike(*params[b]);
      FillUniform(&gradient, -1.f, 1.f, 1000 * step + b);
      std::copy_n(gradient.cpu_data(), gradient.count(), params[b]->mutable_cpu_diff());
    }
    exchange->Exchange(step, params);
    for (Blob* p : params) applied.emplace_back(p->cpu_diff(), p->cpu_diff() + p->count());
  }
  return applied;
}

TEST(ParallelExchangeTest, AppliedGradientsAreThreadCountIndependent) {
  const std::pair<SyncParameter::Method, string> cases[] = {
      {SyncParameter::IWP, ""},
      {SyncParameter::IWP, "momentum_correction: true"},
      {SyncParameter::RANDOMK, ""},
      {SyncParameter::FIXED_THRESHOLD, ""},
  };
  for (const auto& [method, extra] : cases) {
    SCOPED_TRACE(std::to_string(method) + " " + extra);
    const auto one = RunExchange(method, extra, 1);
    const auto two = RunExchange(method, extra, 2);
    ASSERT_EQ(one.size(), two.size());
    int64_t nonzero = 0;
    for (size_t k = 0; k < one.size(); ++k) {
      ASSERT_EQ(one[k], two[k]) << "blob/step " << k;
      for (float v : one[k]) nonzero += v != 0.f;
    }
    EXPECT_GT(nonzero, 0);  // something was sent
  }
}

// CMakeLists.txt links OpenBLAS's OpenMP build where it is installed, and the build
// tree's RUNPATH must make the loader take it rather than the system's default
// (the pthread build on Debian): else two thread pools share the cores again.
TEST(ThreadPoolTest, BlasRunsOnTheOpenMpPoolWhenLinkedSo) {
#ifdef CAFFE_TEST_BLAS_ON_OPENMP
  EXPECT_TRUE(BlasSharesOpenMpPool())
      << "the build linked OpenBLAS's OpenMP build, but the loaded OpenBLAS is another one";
#else
  GTEST_SKIP() << "this build links OpenBLAS's pthread build (libopenblas0-openmp missing)";
#endif
}

}  // namespace
}  // namespace caffe
