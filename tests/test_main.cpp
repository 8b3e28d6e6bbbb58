#include <gtest/gtest.h>
#include <glog/logging.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // GPU tests compare against the CPU at 1e-4: TF32 tensor-core math in cuBLAS and
  // cuDNN would round inputs to 10 mantissa bits. NVIDIA's libraries read this at
  // handle creation, so it must be set before any CUDA call.
  setenv("NVIDIA_TF32_OVERRIDE", "0", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  FLAGS_minloglevel = 2;  // keep test output to gtest's own
  return RUN_ALL_TESTS();
}
