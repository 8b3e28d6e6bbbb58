// DeviceMemoryInUseMegabytes, which `caffe train -gpu` logs at each display and
// scripts/gpu_check.sh reports beside PyTorch's: a device allocation shows in it, and a
// build without CUDA says so with -1.
#include <gtest/gtest.h>

#include "caffe/blob.hpp"
#include "caffe/util/peak_memory.hpp"
#include "gpu_test_support.hpp"

namespace caffe {
namespace {

TEST(DeviceMemoryTest, ABuildWithoutCudaReportsMinusOne) {
#ifdef USE_CUDA
  GTEST_SKIP() << "a CUDA build";
#else
  EXPECT_EQ(DeviceMemoryInUseMegabytes(), -1.0);
#endif
}

TEST(DeviceMemoryTest, AnAllocationShowsInTheMemoryInUse) {
  SKIP_WITHOUT_GPU();
  auto context = MakeGpuContext();  // the device and its CUDA context exist before
  const double before = DeviceMemoryInUseMegabytes();
  ASSERT_GT(before, 0.0);
  Blob blob({64 * 1024 * 1024});  // 256 MB of floats
  blob.mutable_gpu_data();
  const double after = DeviceMemoryInUseMegabytes();
  EXPECT_GE(after - before, 255.0) << "before " << before << " MB, after " << after << " MB";
  EXPECT_LE(after - before, 300.0) << "before " << before << " MB, after " << after << " MB";
}

}  // namespace
}  // namespace caffe
