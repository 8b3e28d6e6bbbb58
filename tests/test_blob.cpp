// Blob: shapes, lazy reallocation, sharing, proto round trips (current and legacy).
#include <gtest/gtest.h>

#include "caffe/blob.hpp"
#include "caffe/util/host_memory_limit.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(BlobTest, ShapeAndCounts) {
  Blob b({2, 3, 4, 5});
  EXPECT_EQ(b.count(), 120);
  EXPECT_EQ(b.count(1), 60);
  EXPECT_EQ(b.count(1, 3), 12);
  EXPECT_EQ(b.shape(-1), 5);
  EXPECT_EQ(b.num(), 2);
  EXPECT_EQ(b.width(), 5);
  EXPECT_EQ(b.offset(1, 2, 3, 4), 119);
  EXPECT_THROW(b.CanonicalAxisIndex(4), Error);
  EXPECT_THROW(b.Reshape({2, -1}), Error);
  Blob scalar(vector<int64_t>{});
  EXPECT_EQ(scalar.count(), 1);
}

TEST(BlobTest, ReshapeKeepsMemoryWhenShrinking) {
  Blob b({4, 4});
  const float* before = b.mutable_cpu_data();
  b.Reshape({2, 2});
  EXPECT_EQ(b.mutable_cpu_data(), before);
  b.Reshape({8, 8});
  EXPECT_EQ(b.count(), 64);
}

TEST(BlobTest, UpdateSubtractsDiff) {
  Blob b({3});
  float* d = b.mutable_cpu_data();
  float* g = b.mutable_cpu_diff();
  for (int i = 0; i < 3; ++i) {
    d[i] = i;
    g[i] = 0.5f;
  }
  b.Update();
  EXPECT_FLOAT_EQ(b.cpu_data()[2], 1.5f);
  EXPECT_FLOAT_EQ(b.asum_data(), 0.5f + 0.5f + 1.5f);
  EXPECT_FLOAT_EQ(b.sumsq_diff(), 0.75f);
}

TEST(BlobTest, ShareDataAliasesMemory) {
  Blob a({2, 2}), b({4});
  b.ShareData(a);
  a.mutable_cpu_data()[3] = 7;
  EXPECT_EQ(b.cpu_data()[3], 7);
}

TEST(BlobTest, ProtoRoundTripAndLegacyShape) {
  Blob a({2, 3});
  FillUniform(&a, -1, 1);
  BlobProto proto;
  a.ToProto(&proto, true);
  Blob b;
  b.FromProto(proto);
  EXPECT_EQ(b.shape(), a.shape());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b.cpu_data()[i], a.cpu_data()[i]);

  BlobProto legacy;
  legacy.set_num(1);
  legacy.set_channels(2);
  legacy.set_height(1);
  legacy.set_width(2);
  for (int i = 0; i < 4; ++i) legacy.add_double_data(i * 0.5);
  Blob c;
  c.FromProto(legacy);
  EXPECT_EQ(c.shape(), (vector<int64_t>{1, 2, 1, 2}));
  EXPECT_FLOAT_EQ(c.cpu_data()[3], 1.5f);

  legacy.add_double_data(9);  // five values for a four-element shape
  EXPECT_THROW(c.FromProto(legacy), Error);
  Blob wrong({3, 3});
  EXPECT_THROW(wrong.FromProto(proto, /*reshape=*/false), Error);
}

// Layers size their scratch vectors with this check, so it must refuse what the host
// cannot hold (the machine's memory, or the limit) and nothing that it can.
TEST(HostMemoryLimitTest, AllocationFitsTheMachineAndTheLimit) {
  EXPECT_TRUE(HostAllocationFits(0, 4));
  EXPECT_TRUE(HostAllocationFits(1024, 4));
  EXPECT_FALSE(HostAllocationFits(-1, 4));
  EXPECT_FALSE(HostAllocationFits(int64_t{1} << 62, 4));  // wraps size_t
  EXPECT_FALSE(HostAllocationFits(int64_t{1} << 50, 4));  // 4 PiB: no machine here has it
  const size_t before = HostMemoryLimit();
  SetHostMemoryLimit(HostMemoryInUse() + 4096);
  EXPECT_TRUE(HostAllocationFits(1024, 4));
  EXPECT_FALSE(HostAllocationFits(1025, 4));
  SetHostMemoryLimit(before);
}

}  // namespace caffe
