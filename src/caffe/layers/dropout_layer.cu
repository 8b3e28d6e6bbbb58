// Dropout on the device. TRAIN draws the keep mask on the device (math::
// gpu_rng_bernoulli, seeded from the context's generator, so re-seeding the context
// repeats the mask) and keeps it on the device for Backward. The masks differ from the
// CPU path's for the same seed; the keep probability and scaling are the same.
#include <memory>

#include "caffe/layers/dropout_layer.hpp"
#include "caffe/layers/neuron_layer.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

struct ApplyMask {
  const float* in;
  const unsigned* mask;
  float* out;
  float scale;
  __device__ void operator()(int64_t i) const { out[i] = mask[i] ? in[i] * scale : 0.f; }
};

struct Scale {
  const float* in;
  float* out;
  float scale;
  __device__ void operator()(int64_t i) const { out[i] = in[i] * scale; }
};

}  // namespace

void DropoutLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  const float* x = bottom[0]->gpu_data();
  float* y = top[0]->mutable_gpu_data();
  const float scale = PhaseScale();
  if (phase_ != TRAIN) {
    LaunchElementwise(count, Scale{x, y, scale});
    return;
  }
  const size_t bytes = static_cast<size_t>(count) * sizeof(unsigned);
  if (!device_mask_ || device_mask_->size() < bytes) {
    device_mask_ = std::make_unique<SyncedMemory>(bytes);
  }
  unsigned* mask = static_cast<unsigned*>(device_mask_->mutable_gpu_data());
  math::gpu_rng_bernoulli(count, 1.f - dropout_ratio_, context().rng(), mask);
  device_mask_count_ = count;
  LaunchElementwise(count, ApplyMask{x, mask, y, scale});
}

void DropoutLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  const float* dy = top[0]->gpu_diff();
  float* dx = bottom[0]->mutable_gpu_diff();
  const float scale = PhaseScale();
  if (phase_ != TRAIN) {
    LaunchElementwise(count, Scale{dy, dx, scale});
    return;
  }
  CHECK(device_mask_ && device_mask_count_ == count) << "Backward without a TRAIN Forward";
  const unsigned* mask = static_cast<const unsigned*>(device_mask_->gpu_data());
  LaunchElementwise(count, ApplyMask{dy, mask, dx, scale});
}

}  // namespace caffe
