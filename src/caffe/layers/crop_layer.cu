// Device path of CropLayer: one thread per top element finds its source in bottom[0]
// from its coordinates plus the crop offsets.
#include "caffe/layers/crop_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Shapes travel to the kernel by value; kMaxBlobAxes bounds the number of axes.
struct CropGeometry {
  int num_axes;
  int64_t top_shape[kMaxBlobAxes];
  int64_t bottom_stride[kMaxBlobAxes];  // elements per step along each bottom axis
  int64_t offset[kMaxBlobAxes];
};

__device__ int64_t BottomIndex(const CropGeometry& g, int64_t top_index) {
  int64_t bottom_index = 0;
  for (int a = g.num_axes - 1; a >= 0; --a) {
    const int64_t coordinate = top_index % g.top_shape[a];
    top_index /= g.top_shape[a];
    bottom_index += (coordinate + g.offset[a]) * g.bottom_stride[a];
  }
  return bottom_index;
}

// to_top: y[top] = x[bottom] (forward); otherwise dx[bottom] = dy[top] (backward).
__global__ void CropCopyKernel(int64_t n, CropGeometry g, bool to_top, const float* from,
                               float* to) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t b = BottomIndex(g, i);
    if (to_top) {
      to[i] = from[b];
    } else {
      to[b] = from[i];
    }
  }
}

CropGeometry Geometry(const Blob& top, const Blob& bottom, const vector<int64_t>& offsets) {
  CropGeometry g{};
  g.num_axes = top.num_axes();
  int64_t stride = 1;
  for (int a = g.num_axes - 1; a >= 0; --a) {
    g.top_shape[a] = top.shape(a);
    g.bottom_stride[a] = stride;
    g.offset[a] = offsets[a];
    stride *= bottom.shape(a);
  }
  return g;
}

}  // namespace

void CropLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = top[0]->count();
  if (count == 0) return;
  CropCopyKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, Geometry(*top[0], *bottom[0], offsets_), true, bottom[0]->gpu_data(),
      top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void CropLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  float* dx = bottom[0]->mutable_gpu_diff();
  math::gpu_set(bottom[0]->count(), 0.f, dx);  // the cropped-away part gets no gradient
  const int64_t count = top[0]->count();
  if (count == 0) return;
  CropCopyKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, Geometry(*top[0], *bottom[0], offsets_), false, top[0]->gpu_diff(), dx);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
