// The DENSE exchange's buckets: every gradient element lands in exactly one bucket,
// buckets respect the capacity, come in backward order, and a bucket is declared
// ready only once backward has written its final gradients (checked on a real net
// with shared weights, whose gradient collects from two layers).
#include <gtest/gtest.h>

#include <map>

#include "caffe/exchanges/dense_exchange.hpp"
#include "caffe/net.hpp"
#include "caffe/sync/bucket_plan.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

TEST(BucketPlanTest, CoversEveryElementOnceWithinCapacityLastParametersFirst) {
  const std::vector<int64_t> sizes = {5, 0, 12, 3, 7};
  const std::vector<int> ready = {0, 1, 1, 3, 4};
  const int64_t capacity = 4;
  BucketPlan plan(sizes, ready, capacity);
  std::map<int, std::vector<int>> seen;  // param -> how often each element appears
  for (size_t p = 0; p < sizes.size(); ++p) seen[p].assign(sizes[p], 0);
  int last_param = static_cast<int>(sizes.size());
  int last_ready = 1 << 30;
  for (const Bucket& bucket : plan.buckets()) {
    int64_t elements = 0;
    int min_ready = 1 << 30;
    for (const BucketPiece& piece : bucket.pieces) {
      ASSERT_GT(piece.length, 0);
      ASSERT_LE(piece.start + piece.length, sizes[piece.param]);
      for (int64_t i = 0; i < piece.length; ++i) ++seen[piece.param][piece.start + i];
      EXPECT_LE(piece.param, last_param) << "pieces must follow backward order";
      last_param = piece.param;
      elements += piece.length;
      min_ready = std::min(min_ready, ready[piece.param]);
    }
    EXPECT_EQ(bucket.elements, elements);
    EXPECT_LE(bucket.elements, capacity);
    EXPECT_EQ(bucket.ready_after_layer, min_ready);
    EXPECT_LE(bucket.ready_after_layer, last_ready);
    last_ready = bucket.ready_after_layer;
  }
  for (const auto& entry : seen) {
    for (int count : entry.second) EXPECT_EQ(count, 1) << "param " << entry.first;
  }
  // 27 elements in buckets of 4: all full but the last.
  EXPECT_EQ(plan.buckets().size(), 7u);
  // Param 4 (7 elements, ready after layer 4) fills the first bucket alone.
  EXPECT_EQ(plan.ReadyCount(5), 0);
  EXPECT_EQ(plan.ReadyCount(4), 1);
  EXPECT_EQ(plan.ReadyCount(0), 7);
}

TEST(BucketPlanTest, WithoutReadyLayersNothingIsReadyBeforeTheEnd) {
  BucketPlan plan({10, 10}, {}, 8);
  EXPECT_EQ(plan.ReadyCount(1), 0);
  EXPECT_EQ(plan.ReadyCount(0), 3);
}

TEST(BucketPlanTest, ZeroCapacityIsAnError) {
  EXPECT_THROW(BucketPlan({1}, {}, 0), Error);
}

// ip1 and ip3 share one weight: its gradient is final only after ip1's backward,
// although ip3 (a later layer) also adds into it.
const char* kSharedWeightNet = R"(
  name: 'shared'
  layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
          dummy_data_param { shape { dim: 3 dim: 6 } shape { dim: 3 dim: 6 }
                             data_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h1'
          param { name: 'w' } param { name: 'b1' }
          inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'act' type: 'TanH' bottom: 'h1' top: 'h2' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'h2' top: 'h3'
          inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'ip3' type: 'InnerProduct' bottom: 'h3' top: 'h4'
          param { name: 'w' } param { name: 'b3' }
          inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'h4' bottom: 'y' top: 'loss' })";

TEST(BucketPlanTest, BucketsAreReadyOnlyWhenBackwardHasFinishedTheirGradients) {
  NetParameter param = ParseNet(kSharedWeightNet);
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, std::make_shared<Context>());
  const vector<int> ready = net.learnable_param_ready_layers();
  const vector<Blob*>& params = net.learnable_params();
  // Learnable: w (ip1), b1, ip2 w, ip2 b, b3; w is ready after ip1 (layer 1).
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(ready[0], 1);
  EXPECT_EQ(ready[1], 1);
  EXPECT_EQ(ready[2], 3);
  EXPECT_EQ(ready[4], 4);

  vector<int64_t> sizes;
  for (Blob* p : params) sizes.push_back(p->count());
  for (int64_t capacity : {1, 5, 7, 36, 1000}) {
    BucketPlan plan(sizes, ready, capacity);
    // What each bucket's gradients were when the plan first called it ready.
    std::map<int, vector<float>> at_ready;
    int announced = 0;
    net.ClearParamDiffs();
    net.set_backward_observer([&](int layer) {
      for (; announced < plan.ReadyCount(layer); ++announced) {
        vector<float>& copy = at_ready[announced];
        for (const BucketPiece& piece : plan.buckets()[announced].pieces) {
          const float* diff = params[piece.param]->cpu_diff() + piece.start;
          copy.insert(copy.end(), diff, diff + piece.length);
        }
      }
    });
    net.ForwardBackward();
    net.set_backward_observer(nullptr);
    ASSERT_EQ(announced, static_cast<int>(plan.buckets().size()));
    int early = 0;
    for (int b = 0; b < announced; ++b) {
      const Bucket& bucket = plan.buckets()[b];
      early += bucket.ready_after_layer > 0;
      size_t pos = 0;
      for (const BucketPiece& piece : bucket.pieces) {
        const float* diff = params[piece.param]->cpu_diff() + piece.start;
        for (int64_t i = 0; i < piece.length; ++i, ++pos) {
          ASSERT_EQ(at_ready[b][pos], diff[i])
              << "capacity " << capacity << " bucket " << b << " param " << piece.param;
        }
      }
    }
    // With small buckets some are ready well before backward ends: the overlap.
    if (capacity <= 7) {
      EXPECT_GT(early, 1) << "capacity " << capacity;
    }
  }
}

TEST(DenseExchangeTest, ReportsEarlyBucketsAndLeavesOneRankUnchanged) {
  // One rank: the exchange is the identity, whatever backward reports.
  SyncParameter sync;
  sync.set_bucket_size_mb(0.0001);  // 26 floats per bucket
  DenseExchange exchange(sync, Transport(std::make_shared<LocalCommunicator>()));
  Blob a({40}), b({10});
  for (int i = 0; i < a.count(); ++i) a.mutable_cpu_diff()[i] = 0.25f * i - 3;
  vector<float> before(a.cpu_diff(), a.cpu_diff() + a.count());
  exchange.BeginBackward(0, {&a, &b});
  exchange.OnLayerBackward(0);
  exchange.Exchange(0, {&a, &b});
  for (int i = 0; i < a.count(); ++i) EXPECT_EQ(a.cpu_diff()[i], before[i]);
}

}  // namespace
}  // namespace caffe
