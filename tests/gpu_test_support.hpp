// Support for tests of the device (CUDA) code paths. Every GPU test starts with
// SKIP_WITHOUT_GPU(), so CPU-only builds and machines without a driver skip it with a
// reason and the suite still passes. ExpectGpuMatchesCpu is the standard check of a
// layer's GPU path: the same layer built twice, fed the same inputs, compared with the
// CPU path as the reference.
#ifndef CAFFE_TESTS_GPU_TEST_SUPPORT_HPP_
#define CAFFE_TESTS_GPU_TEST_SUPPORT_HPP_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

// "" when a CUDA device can run this build's kernels; otherwise why not (a CPU-only
// build, or no device / no driver).
std::string GpuUnavailableReason();

#define SKIP_WITHOUT_GPU()                                               \
  do {                                                                   \
    const std::string gpu_skip_reason_ = ::caffe::GpuUnavailableReason(); \
    if (!gpu_skip_reason_.empty()) GTEST_SKIP() << gpu_skip_reason_;     \
  } while (0)

// A context in GPU mode on `device` (the layer's set_context argument).
std::shared_ptr<Context> MakeGpuContext(int device = 0);

struct GpuComparison {
  // Largest allowed |gpu - cpu| / max(1, |cpu|) over every compared element.
  float tolerance = 1e-4f;
  // Fills bottom i before both runs (default: uniform in [-1, 1], a seed per bottom).
  // Label-like bottoms need their own filler.
  std::function<void(int bottom_index, Blob* bottom)> fill_bottom;
  // Which bottoms get a gradient (default: all).
  std::vector<bool> propagate_down;
  bool check_backward = true;
  // Expect every top of more than one element to be written on the device. Off only
  // for layers that share their bottom's memory (Flatten, Reshape) or that run on the
  // host by design (STOCHASTIC pooling, n-d convolution).
  bool expect_device_output = true;
  // The CPU reference is built from this parameter when set: an engine variant (say
  // engine: CUDNN) on the GPU is then compared with the reference class (engine: CAFFE)
  // on the CPU, not with its own inherited CPU path. Weights must have the same shapes.
  std::optional<LayerParameter> cpu_param;
};

// A DEFAULT engine is pinned to CAFFE on both sides (DEFAULT picks oneDNN on the CPU
// and cuDNN on the GPU, which would change the code under test unnoticed); tests of
// another engine name it. Builds `param`'s layer (options.cpu_param's for the CPU
// side, when set) on a CPU
// context and on a GPU context, gives the GPU one the CPU one's weights, runs Forward on
// the same bottoms and Backward with the same top diffs (Gaussian; a loss top gets
// 0.75, a loss weight other than 1) onto the same nonzero weight diffs (backward must
// accumulate into them), and expects tops, bottom diffs and weight diffs to agree
// within options.tolerance.
// Call after SKIP_WITHOUT_GPU().
void ExpectGpuMatchesCpu(const LayerParameter& param,
                         const std::vector<std::vector<int64_t>>& bottom_shapes,
                         const GpuComparison& options = GpuComparison());

}  // namespace caffe

#endif  // CAFFE_TESTS_GPU_TEST_SUPPORT_HPP_
