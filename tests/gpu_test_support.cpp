#include "gpu_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <google/protobuf/message.h>

#include "caffe/layer.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/syncedmem.hpp"
#include "caffe/util/device_alternate.hpp"
#include "test_util.hpp"

namespace caffe {

std::string GpuUnavailableReason() {
#ifndef USE_CUDA
  return "CPU-only build (configured with CPU_ONLY or without nvcc): GPU test skipped";
#else
  if (CudaDeviceCount() == 0) {
    return "no usable CUDA device (cudaGetDeviceCount failed or found none): GPU test skipped";
  }
  return "";
#endif
}

std::shared_ptr<Context> MakeGpuContext(int device) {
  auto context = std::make_shared<Context>();
  context->set_mode(Mode::GPU);
  context->set_device_id(device);
  return context;
}

namespace {

// ExpectGpuMatchesCpu's backward inputs: a loss top's diff (the loss weight a net
// would put there), and the spread of the weight diffs' starting values.
constexpr float kLossTopDiff = 0.75f;
constexpr float kWeightDiffStartStddev = 0.1f;

struct LayerRun {
  std::shared_ptr<Layer> layer;
  std::vector<std::unique_ptr<Blob>> bottoms, tops;
  std::vector<Blob*> bottom_ptrs, top_ptrs;
};

// The engine-bearing parameter of the layer types that come in several engines.
google::protobuf::Message* EngineParam(LayerParameter* param) {
  const std::string& type = param->type();
  if (type == "Convolution" || type == "Deconvolution") return param->mutable_convolution_param();
  if (type == "Pooling") return param->mutable_pooling_param();
  if (type == "SPP") return param->mutable_spp_param();  // the engine of its Pooling layers
  if (type == "LRN") return param->mutable_lrn_param();
  if (type == "ReLU") return param->mutable_relu_param();
  if (type == "Sigmoid") return param->mutable_sigmoid_param();
  if (type == "TanH") return param->mutable_tanh_param();
  if (type == "Softmax") return param->mutable_softmax_param();
  if (type == "BatchNorm") return param->mutable_batch_norm_param();
  return nullptr;
}

// DEFAULT means different classes in CPU and GPU mode (oneDNN, cuDNN); a comparison
// must test the code its parameter names, so DEFAULT is pinned to the reference
// engine on both sides. Tests of another engine name it (engine: CUDNN).
LayerParameter PinDefaultEngine(const LayerParameter& param) {
  LayerParameter pinned = param;
  google::protobuf::Message* engine_param = EngineParam(&pinned);
  if (engine_param == nullptr) return pinned;
  const auto* field = engine_param->GetDescriptor()->FindFieldByName("engine");
  const auto* reflection = engine_param->GetReflection();
  if (field != nullptr && reflection->GetEnumValue(*engine_param, field) ==
                              ConvolutionParameter::DEFAULT) {
    reflection->SetEnumValue(engine_param, field, ConvolutionParameter::CAFFE);
  }
  return pinned;
}

void Build(const LayerParameter& param, const std::vector<std::vector<int64_t>>& shapes,
           std::shared_ptr<Context> context, LayerRun* run) {
  run->layer = LayerRegistry::CreateLayer(PinDefaultEngine(param), *context);
  run->layer->set_context(std::move(context));
  for (const auto& shape : shapes) {
    run->bottoms.push_back(std::make_unique<Blob>(shape));
    run->bottom_ptrs.push_back(run->bottoms.back().get());
  }
  const int num_tops = std::max(param.top_size(), 1);
  for (int i = 0; i < num_tops; ++i) {
    run->tops.push_back(std::make_unique<Blob>());
    run->top_ptrs.push_back(run->tops.back().get());
  }
}

// Expects b to match the reference a elementwise; `what` names the blob in failures.
void ExpectClose(const float* reference, const float* actual, int64_t count, float tolerance,
                 const std::string& what) {
  int64_t worst = -1;
  double worst_error = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - reference[i]) /
                         std::max(1.0, std::fabs(static_cast<double>(reference[i])));
    if (!(error <= worst_error)) {  // NaN counts as worst
      worst_error = error;
      worst = i;
    }
  }
  EXPECT_TRUE(worst < 0 || worst_error <= tolerance)
      << what << ": element " << worst << " is " << actual[worst] << " on the GPU and "
      << reference[worst] << " on the CPU (relative error " << worst_error << ", tolerance "
      << tolerance << ")";
}

}  // namespace

void ExpectGpuMatchesCpu(const LayerParameter& param,
                         const std::vector<std::vector<int64_t>>& bottom_shapes,
                         const GpuComparison& options) {
  LayerRun cpu, gpu;
  Build(options.cpu_param ? *options.cpu_param : param, bottom_shapes, std::make_shared<Context>(),
        &cpu);
  Build(param, bottom_shapes, MakeGpuContext(0), &gpu);
  for (size_t i = 0; i < bottom_shapes.size(); ++i) {
    if (options.fill_bottom) {
      options.fill_bottom(static_cast<int>(i), cpu.bottoms[i].get());
    } else {
      FillUniform(cpu.bottoms[i].get(), -1, 1, 1701 + i);
    }
    std::copy(cpu.bottoms[i]->cpu_data(), cpu.bottoms[i]->cpu_data() + cpu.bottoms[i]->count(),
              gpu.bottoms[i]->mutable_cpu_data());
  }
  cpu.layer->SetUp(cpu.bottom_ptrs, cpu.top_ptrs);
  gpu.layer->SetUp(gpu.bottom_ptrs, gpu.top_ptrs);
  ASSERT_EQ(cpu.layer->blobs().size(), gpu.layer->blobs().size());
  for (size_t b = 0; b < cpu.layer->blobs().size(); ++b) {
    Blob& from = *cpu.layer->blobs()[b];
    Blob& to = *gpu.layer->blobs()[b];
    ASSERT_EQ(from.shape(), to.shape()) << "weight blob " << b;
    std::copy(from.cpu_data(), from.cpu_data() + from.count(), to.mutable_cpu_data());
  }

  cpu.layer->Forward(cpu.bottom_ptrs, cpu.top_ptrs);
  gpu.layer->Forward(gpu.bottom_ptrs, gpu.top_ptrs);
  const std::string layer = param.type() + " layer '" + param.name() + "'";
  if (options.expect_device_output) {
    // A GPU path writes its tops through mutable_gpu_data; the host fallback would
    // leave them at the CPU and the comparison below would pass without a kernel run.
    // A scalar top (a loss) may be written from the host after a device reduction.
    for (size_t t = 0; t < gpu.tops.size(); ++t) {
      if (gpu.tops[t]->count() <= 1) continue;
      // A top that shares a bottom's memory (Split, a one-bottom Concat or Slice) is
      // where the bottom is, which the test filled on the host.
      bool shares_bottom = false;
      for (const auto& b : gpu.bottoms) shares_bottom |= b->data() == gpu.tops[t]->data();
      if (shares_bottom) continue;
      EXPECT_EQ(gpu.tops[t]->data()->head(), SyncedMemory::AT_GPU)
          << layer << " top " << t << " was not produced on the device (host fallback?)";
    }
  }
  for (size_t t = 0; t < cpu.tops.size(); ++t) {
    ASSERT_EQ(cpu.tops[t]->shape(), gpu.tops[t]->shape()) << layer << " top " << t;
    ExpectClose(cpu.tops[t]->cpu_data(), gpu.tops[t]->cpu_data(), cpu.tops[t]->count(),
                options.tolerance, layer + " top " + std::to_string(t) + " data");
  }
  if (!options.check_backward) return;

  for (size_t t = 0; t < cpu.tops.size(); ++t) {
    Blob* top = cpu.tops[t].get();
    if (cpu.layer->loss(static_cast<int>(t)) != 0) {
      // A net puts the loss weight into the loss top's diff; one other than 1 checks
      // that backward scales by it rather than assuming 1.
      std::fill(top->mutable_cpu_diff(), top->mutable_cpu_diff() + top->count(),
                kLossTopDiff);
    } else {
      Blob noise(top->shape());
      FillGaussian(&noise, 1.f, 4242 + t);
      std::copy(noise.cpu_data(), noise.cpu_data() + noise.count(), top->mutable_cpu_diff());
    }
    std::copy(top->cpu_diff(), top->cpu_diff() + top->count(),
              gpu.tops[t]->mutable_cpu_diff());
  }
  // Weight diffs start from the same nonzero values on both sides: backward must add
  // to them (iter_size > 1 and shared weights rely on that), so a kernel that
  // overwrites them fails here. Small values keep the relative tolerance as sensitive
  // to a missing gradient as a zero start would.
  for (size_t b = 0; b < cpu.layer->blobs().size(); ++b) {
    Blob& from = *cpu.layer->blobs()[b];
    Blob start(from.shape());
    FillGaussian(&start, kWeightDiffStartStddev, 5151 + b);
    std::copy(start.cpu_data(), start.cpu_data() + start.count(), from.mutable_cpu_diff());
    Blob& to = *gpu.layer->blobs()[b];
    std::copy(start.cpu_data(), start.cpu_data() + start.count(), to.mutable_cpu_diff());
  }
  std::vector<bool> propagate_down = options.propagate_down;
  if (propagate_down.empty()) propagate_down.assign(bottom_shapes.size(), true);
  cpu.layer->Backward(cpu.top_ptrs, propagate_down, cpu.bottom_ptrs);
  gpu.layer->Backward(gpu.top_ptrs, propagate_down, gpu.bottom_ptrs);
  for (size_t i = 0; i < bottom_shapes.size(); ++i) {
    if (!propagate_down[i]) continue;
    ExpectClose(cpu.bottoms[i]->cpu_diff(), gpu.bottoms[i]->cpu_diff(), cpu.bottoms[i]->count(),
                options.tolerance, layer + " bottom " + std::to_string(i) + " diff");
  }
  for (size_t b = 0; b < cpu.layer->blobs().size(); ++b) {
    ExpectClose(cpu.layer->blobs()[b]->cpu_diff(), gpu.layer->blobs()[b]->cpu_diff(),
                cpu.layer->blobs()[b]->count(), options.tolerance,
                layer + " weight " + std::to_string(b) + " diff");
  }
}

}  // namespace caffe
