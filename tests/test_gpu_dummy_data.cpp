// DummyData in GPU mode: uniform and Gaussian tops are drawn on the device (none of
// the batch crosses PCIe), with the filler's range and moments, fresh on every
// Forward; a filler the device does not draw still fills on the host. Skips where no
// GPU can run this build's kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/syncedmem.hpp"
#include "gpu_test_support.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

struct Moments {
  double mean = 0, variance = 0, min = 1e30, max = -1e30;
};

Moments Measure(const Blob& blob) {
  const float* x = blob.cpu_data();
  Moments m;
  for (int64_t i = 0; i < blob.count(); ++i) {
    m.mean += x[i];
    m.min = std::min(m.min, static_cast<double>(x[i]));
    m.max = std::max(m.max, static_cast<double>(x[i]));
  }
  m.mean /= blob.count();
  for (int64_t i = 0; i < blob.count(); ++i) m.variance += (x[i] - m.mean) * (x[i] - m.mean);
  m.variance /= blob.count();
  return m;
}

TEST(GpuDummyDataLayerTest, DrawsUniformAndGaussianTopsOnTheDevice) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer(
      "name: 'd' type: 'DummyData' top: 'u' top: 'g' top: 'x' "
      "dummy_data_param { shape { dim: 64 dim: 3 dim: 33 dim: 31 } "
      "shape { dim: 100001 } shape { dim: 16 dim: 9 } "
      "data_filler { type: 'uniform' min: -2 max: 6 } "
      "data_filler { type: 'gaussian' mean: 1 std: 3 } "
      "data_filler { type: 'xavier' } }"));
  layer->set_context(MakeGpuContext());
  Blob u, g, x;
  const vector<Blob*> bottom, top = {&u, &g, &x};
  layer->SetUp(bottom, top);
  layer->Forward(bottom, top);
  EXPECT_EQ(u.data()->head(), SyncedMemory::AT_GPU) << "the uniform top was drawn on the host";
  EXPECT_EQ(g.data()->head(), SyncedMemory::AT_GPU) << "the Gaussian top was drawn on the host";

  const Moments mu = Measure(u);  // uniform on [-2, 6): mean 2, variance 64 / 12
  EXPECT_GE(mu.min, -2.0);
  EXPECT_LT(mu.max, 6.0);
  EXPECT_LT(mu.min, -1.99);
  EXPECT_GT(mu.max, 5.99);
  EXPECT_NEAR(mu.mean, 2.0, 0.02);
  EXPECT_NEAR(mu.variance, 64.0 / 12.0, 0.05);
  const Moments mg = Measure(g);
  EXPECT_NEAR(mg.mean, 1.0, 0.04);
  EXPECT_NEAR(std::sqrt(mg.variance), 3.0, 0.03);

  // Xavier: uniform in +-sqrt(3 / fan_in), fan_in 9, filled on the host.
  const Moments mx = Measure(x);
  EXPECT_LE(mx.max, std::sqrt(3.0 / 9.0) + 1e-6);
  EXPECT_GT(mx.max - mx.min, 0.1);

  // Every Forward is a new draw.
  const std::vector<float> first(u.cpu_data(), u.cpu_data() + u.count());
  layer->Forward(bottom, top);
  int64_t same = 0;
  for (int64_t i = 0; i < u.count(); ++i) same += u.cpu_data()[i] == first[i];
  EXPECT_LT(same, u.count() / 1000) << "the second Forward repeated the first draw";
}

}  // namespace
}  // namespace caffe
