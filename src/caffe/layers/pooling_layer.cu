// Pooling on the device: MAX and AVE (global pooling too, which is the same windows
// with the kernel set to the image). STOCHASTIC keeps the host path: its TRAIN draws
// come from the context's host generator, and matching them on the device would need
// the same draws shipped over anyway.
//
// Windows, tie-breaking and AVE divisors are exactly those of pooling_layer.cpp.
// Backward gathers: one thread per bottom element visits the outputs whose windows
// contain it, in output order, so no atomics are needed and the sums are the host's.
#include <cfloat>

#include "caffe/layers/pooling_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

struct PoolGeometry {
  int height, width;
  int pooled_height, pooled_width;
  int kernel_h, kernel_w;
  int stride_h, stride_w;
  int pad_h, pad_w;
};

// First and one-past-last output row (or column) whose window covers input row h:
// window ph covers [ph * stride - pad, ph * stride - pad + kernel).
__device__ inline void CoveringOutputs(int h, int kernel, int stride, int pad, int pooled,
                                       int* first, int* last) {
  const int shifted = h + pad;
  *first = shifted < kernel ? 0 : (shifted - kernel) / stride + 1;
  *last = min(shifted / stride + 1, pooled);
}

// One thread per output. The first element of the window is always taken, then only a
// strictly larger one, so ties (and NaNs) resolve as on the host. A window wholly in the
// padding outputs 0 with index -1.
__global__ void MaxPoolForwardKernel(int64_t outputs, const float* x, PoolGeometry g, float* y,
                                     float* mask_top, int* source_index) {
  CUDA_GRID_STRIDE_LOOP(index, outputs) {
    const int pw = static_cast<int>(index % g.pooled_width);
    const int ph = static_cast<int>((index / g.pooled_width) % g.pooled_height);
    const int64_t plane = index / (static_cast<int64_t>(g.pooled_height) * g.pooled_width);
    const float* in = x + plane * g.height * g.width;
    const int h0 = ph * g.stride_h - g.pad_h;
    const int w0 = pw * g.stride_w - g.pad_w;
    const int h_end = min(h0 + g.kernel_h, g.height), w_end = min(w0 + g.kernel_w, g.width);
    float best = -FLT_MAX;
    int best_index = -1;
    for (int h = max(h0, 0); h < h_end; ++h) {
      for (int w = max(w0, 0); w < w_end; ++w) {
        const float v = in[h * g.width + w];
        if (v > best || best_index < 0) {
          best = v;
          best_index = h * g.width + w;
        }
      }
    }
    y[index] = best_index < 0 ? 0.f : best;
    if (mask_top) {
      mask_top[index] = static_cast<float>(best_index);
    } else {
      source_index[index] = best_index;
    }
  }
}

// AVE divides by the window clipped to the padded image (padding counts as zeros).
__device__ inline int AveragePoolSize(int h0, int w0, const PoolGeometry& g) {
  const int h1 = min(h0 + g.kernel_h, g.height + g.pad_h);
  const int w1 = min(w0 + g.kernel_w, g.width + g.pad_w);
  return (h1 - h0) * (w1 - w0);
}

__global__ void AvePoolForwardKernel(int64_t outputs, const float* x, PoolGeometry g, float* y) {
  CUDA_GRID_STRIDE_LOOP(index, outputs) {
    const int pw = static_cast<int>(index % g.pooled_width);
    const int ph = static_cast<int>((index / g.pooled_width) % g.pooled_height);
    const int64_t plane = index / (static_cast<int64_t>(g.pooled_height) * g.pooled_width);
    const float* in = x + plane * g.height * g.width;
    const int h0 = ph * g.stride_h - g.pad_h;
    const int w0 = pw * g.stride_w - g.pad_w;
    const int h_begin = max(h0, 0), w_begin = max(w0, 0);
    const int h_end = min(h0 + g.kernel_h, g.height), w_end = min(w0 + g.kernel_w, g.width);
    float sum = 0.f;
    for (int h = h_begin; h < h_end; ++h) {
      for (int w = w_begin; w < w_end; ++w) sum += in[h * g.width + w];
    }
    const bool empty = h_begin >= h_end || w_begin >= w_end;
    y[index] = empty ? 0.f : sum / AveragePoolSize(h0, w0, g);
  }
}

// One thread per bottom element: the sum of dy over the outputs that chose it. Exactly
// one of mask_top (float indices, the second top) and source_index is given.
__global__ void MaxPoolBackwardKernel(int64_t elements, const float* dy, const float* mask_top,
                                      const int* source_index, PoolGeometry g, float* dx) {
  CUDA_GRID_STRIDE_LOOP(index, elements) {
    const int w = static_cast<int>(index % g.width);
    const int h = static_cast<int>((index / g.width) % g.height);
    const int64_t plane = index / (static_cast<int64_t>(g.height) * g.width);
    const int64_t plane_offset = plane * g.pooled_height * g.pooled_width;
    const int self = h * g.width + w;
    int ph_first, ph_last, pw_first, pw_last;
    CoveringOutputs(h, g.kernel_h, g.stride_h, g.pad_h, g.pooled_height, &ph_first, &ph_last);
    CoveringOutputs(w, g.kernel_w, g.stride_w, g.pad_w, g.pooled_width, &pw_first, &pw_last);
    float sum = 0.f;
    for (int ph = ph_first; ph < ph_last; ++ph) {
      for (int pw = pw_first; pw < pw_last; ++pw) {
        const int64_t out = plane_offset + ph * g.pooled_width + pw;
        const int chosen = mask_top ? static_cast<int>(mask_top[out]) : source_index[out];
        if (chosen == self) sum += dy[out];
      }
    }
    dx[index] = sum;
  }
}

__global__ void AvePoolBackwardKernel(int64_t elements, const float* dy, PoolGeometry g,
                                      float* dx) {
  CUDA_GRID_STRIDE_LOOP(index, elements) {
    const int w = static_cast<int>(index % g.width);
    const int h = static_cast<int>((index / g.width) % g.height);
    const int64_t plane = index / (static_cast<int64_t>(g.height) * g.width);
    const int64_t plane_offset = plane * g.pooled_height * g.pooled_width;
    int ph_first, ph_last, pw_first, pw_last;
    CoveringOutputs(h, g.kernel_h, g.stride_h, g.pad_h, g.pooled_height, &ph_first, &ph_last);
    CoveringOutputs(w, g.kernel_w, g.stride_w, g.pad_w, g.pooled_width, &pw_first, &pw_last);
    float sum = 0.f;
    for (int ph = ph_first; ph < ph_last; ++ph) {
      for (int pw = pw_first; pw < pw_last; ++pw) {
        // Same rounding as the host: the share is formed first, then added.
        const float share = dy[plane_offset + ph * g.pooled_width + pw] /
                            AveragePoolSize(ph * g.stride_h - g.pad_h, pw * g.stride_w - g.pad_w, g);
        sum += share;
      }
    }
    dx[index] = sum;
  }
}

}  // namespace

void PoolingLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (method_ == PoolingParameter::STOCHASTIC) {
    Forward_cpu(bottom, top);
    return;
  }
  const PoolGeometry g{height_,   width_,    pooled_height_, pooled_width_, kernel_h_,
                       kernel_w_, stride_h_, stride_w_,      pad_h_,        pad_w_};
  const int64_t outputs = top[0]->count();
  const float* x = bottom[0]->gpu_data();
  float* y = top[0]->mutable_gpu_data();
  if (method_ == PoolingParameter::MAX) {
    float* mask_top = top.size() > 1 ? top[1]->mutable_gpu_data() : nullptr;
    int* source_index = nullptr;
    if (!mask_top) {
      const size_t bytes = sizeof(int) * static_cast<size_t>(outputs);
      if (!gpu_source_index_ || gpu_source_index_->size() != bytes) {
        gpu_source_index_ = std::make_unique<SyncedMemory>(bytes);
      }
      source_index = static_cast<int*>(gpu_source_index_->mutable_gpu_data());
    }
    MaxPoolForwardKernel<<<CudaGridBlocks(outputs), kCudaThreads>>>(outputs, x, g, y, mask_top,
                                                                   source_index);
  } else {
    AvePoolForwardKernel<<<CudaGridBlocks(outputs), kCudaThreads>>>(outputs, x, g, y);
  }
  CUDA_CHECK(cudaPeekAtLastError());
}

void PoolingLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (method_ == PoolingParameter::STOCHASTIC) {
    Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  const PoolGeometry g{height_,   width_,    pooled_height_, pooled_width_, kernel_h_,
                       kernel_w_, stride_h_, stride_w_,      pad_h_,        pad_w_};
  const int64_t elements = bottom[0]->count();
  const float* dy = top[0]->gpu_diff();
  float* dx = bottom[0]->mutable_gpu_diff();
  if (method_ == PoolingParameter::MAX) {
    const float* mask_top = top.size() > 1 ? top[1]->gpu_data() : nullptr;
    const int* source_index = nullptr;
    if (!mask_top) {
      CHECK(gpu_source_index_ &&
            gpu_source_index_->size() == sizeof(int) * static_cast<size_t>(top[0]->count()))
          << "MAX pooling backward on the GPU without a GPU forward";
      source_index = static_cast<const int*>(gpu_source_index_->gpu_data());
    }
    MaxPoolBackwardKernel<<<CudaGridBlocks(elements), kCudaThreads>>>(elements, dy, mask_top,
                                                                    source_index, g, dx);
  } else {
    AvePoolBackwardKernel<<<CudaGridBlocks(elements), kCudaThreads>>>(elements, dy, g, dx);
  }
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
