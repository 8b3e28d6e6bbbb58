// Device im2col / col2im (2-d, with dilation), producing exactly the layouts of the
// host versions in im2col.cpp: column row (c * kernel_h + i) * kernel_w + j holds, at
// output position (oh, ow), image element (c, oh * stride_h - pad_h + i * dilation_h,
// ow * stride_w - pad_w + j * dilation_w), or 0 where that falls in the padding.
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/im2col.hpp"

namespace caffe {

namespace {

struct Geometry {
  int height, width;
  int kernel_h, kernel_w;
  int pad_h, pad_w;
  int stride_h, stride_w;
  int dilation_h, dilation_w;
  int out_h, out_w;
};

Geometry MakeGeometry(int height, int width, int kernel_h, int kernel_w, int pad_h, int pad_w,
                      int stride_h, int stride_w, int dilation_h, int dilation_w) {
  Geometry g{height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w,
             dilation_h, dilation_w, 0, 0};
  g.out_h = (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1;
  g.out_w = (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1;
  return g;
}

__device__ inline bool InRange(int v, int limit) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(limit);
}

// One thread per (channel, output row, output column): it gathers the
// kernel_h * kernel_w image values that output position sees, one per column row.
__global__ void Im2colKernel(int64_t positions, const float* image, Geometry g, float* columns) {
  const int64_t plane_out = static_cast<int64_t>(g.out_h) * g.out_w;
  CUDA_GRID_STRIDE_LOOP(index, positions) {
    const int ow = static_cast<int>(index % g.out_w);
    const int oh = static_cast<int>((index / g.out_w) % g.out_h);
    const int64_t c = index / plane_out;
    const float* plane = image + c * g.height * g.width;
    float* out = columns + c * g.kernel_h * g.kernel_w * plane_out + oh * g.out_w + ow;
    const int h_start = oh * g.stride_h - g.pad_h;
    const int w_start = ow * g.stride_w - g.pad_w;
    for (int i = 0; i < g.kernel_h; ++i) {
      const int h = h_start + i * g.dilation_h;
      for (int j = 0; j < g.kernel_w; ++j, out += plane_out) {
        const int w = w_start + j * g.dilation_w;
        *out = (InRange(h, g.height) && InRange(w, g.width)) ? plane[h * g.width + w] : 0.f;
      }
    }
  }
}

// One thread per image element: it sums every column entry that was read from it.
// Gathering instead of scattering needs no atomics, and visiting the kernel offsets
// (i, j) in increasing order adds the terms in the order col2im (host) does, so both
// give the same floats.
__global__ void Col2imKernel(int64_t elements, const float* columns, Geometry g, float* image) {
  const int64_t plane_out = static_cast<int64_t>(g.out_h) * g.out_w;
  CUDA_GRID_STRIDE_LOOP(index, elements) {
    const int w = static_cast<int>(index % g.width);
    const int h = static_cast<int>((index / g.width) % g.height);
    const int64_t c = index / (static_cast<int64_t>(g.height) * g.width);
    const float* channel_columns = columns + c * g.kernel_h * g.kernel_w * plane_out;
    float sum = 0.f;
    for (int i = 0; i < g.kernel_h; ++i) {
      // Output row oh read this element through kernel row i when
      // oh * stride_h = h + pad_h - i * dilation_h.
      const int h_offset = h + g.pad_h - i * g.dilation_h;
      if (h_offset < 0 || h_offset % g.stride_h != 0) continue;
      const int oh = h_offset / g.stride_h;
      if (oh >= g.out_h) continue;
      for (int j = 0; j < g.kernel_w; ++j) {
        const int w_offset = w + g.pad_w - j * g.dilation_w;
        if (w_offset < 0 || w_offset % g.stride_w != 0) continue;
        const int ow = w_offset / g.stride_w;
        if (ow >= g.out_w) continue;
        sum += channel_columns[(i * g.kernel_w + j) * plane_out + oh * g.out_w + ow];
      }
    }
    image[index] = sum;
  }
}

}  // namespace

void im2col_gpu(const float* data_im, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, float* data_col) {
  const Geometry g = MakeGeometry(height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h,
                                  stride_w, dilation_h, dilation_w);
  const int64_t positions = static_cast<int64_t>(channels) * g.out_h * g.out_w;
  if (positions <= 0) return;
  Im2colKernel<<<CudaGridBlocks(positions), kCudaThreads>>>(positions, data_im, g, data_col);
  CUDA_CHECK(cudaPeekAtLastError());
}

void col2im_gpu(const float* data_col, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, float* data_im) {
  const Geometry g = MakeGeometry(height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h,
                                  stride_w, dilation_h, dilation_w);
  const int64_t elements = static_cast<int64_t>(channels) * height * width;
  if (elements <= 0) return;
  Col2imKernel<<<CudaGridBlocks(elements), kCudaThreads>>>(elements, data_col, g, data_im);
  CUDA_CHECK(cudaPeekAtLastError());
}

}  // namespace caffe
