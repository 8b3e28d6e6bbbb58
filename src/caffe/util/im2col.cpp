#include "caffe/util/im2col.hpp"

#include <cstring>
#include <vector>

namespace caffe {

namespace {
inline bool InRange(int v, int limit) { return static_cast<unsigned>(v) < static_cast<unsigned>(limit); }
}  // namespace

void im2col(const float* data_im, int channels, int height, int width, int kernel_h,
            int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
            int dilation_w, float* data_col) {
  const int out_h = (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1;
  const int out_w = (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1;
  const int channel_size = height * width;
  for (int c = 0; c < channels; ++c, data_im += channel_size) {
    for (int kh = 0; kh < kernel_h; ++kh) {
      for (int kw = 0; kw < kernel_w; ++kw) {
        int in_row = kh * dilation_h - pad_h;
        for (int oh = 0; oh < out_h; ++oh, in_row += stride_h) {
          if (!InRange(in_row, height)) {
            std::memset(data_col, 0, sizeof(float) * out_w);
            data_col += out_w;
            continue;
          }
          const float* row = data_im + in_row * width;
          int in_col = kw * dilation_w - pad_w;
          for (int ow = 0; ow < out_w; ++ow, in_col += stride_w) {
            *data_col++ = InRange(in_col, width) ? row[in_col] : 0.f;
          }
        }
      }
    }
  }
}

void col2im(const float* data_col, int channels, int height, int width, int kernel_h,
            int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
            int dilation_w, float* data_im) {
  std::memset(data_im, 0, sizeof(float) * channels * height * width);
  const int out_h = (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1;
  const int out_w = (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1;
  const int channel_size = height * width;
  for (int c = 0; c < channels; ++c, data_im += channel_size) {
    for (int kh = 0; kh < kernel_h; ++kh) {
      for (int kw = 0; kw < kernel_w; ++kw) {
        int in_row = kh * dilation_h - pad_h;
        for (int oh = 0; oh < out_h; ++oh, in_row += stride_h) {
          if (!InRange(in_row, height)) {
            data_col += out_w;
            continue;
          }
          float* row = data_im + in_row * width;
          int in_col = kw * dilation_w - pad_w;
          for (int ow = 0; ow < out_w; ++ow, in_col += stride_w, ++data_col) {
            if (InRange(in_col, width)) row[in_col] += *data_col;
          }
        }
      }
    }
  }
}

namespace {

// Shared walk for the n-d forms: for every (channel, kernel offset, output position)
// either copy image -> column or accumulate column -> image.
template <bool kToColumns>
void WalkNd(const float* in, int num_axes, const int* im_shape, const int* col_shape,
            const int* kernel_shape, const int* pad, const int* stride, const int* dilation,
            float* out) {
  int kernel_size = 1;
  for (int i = 0; i < num_axes; ++i) kernel_size *= kernel_shape[i];
  const int channels_col = col_shape[0];
  std::vector<int> kernel_offset(num_axes), col_index(num_axes);
  int col_spatial = 1;
  for (int i = 0; i < num_axes; ++i) col_spatial *= col_shape[i + 1];
  for (int c_col = 0; c_col < channels_col; ++c_col) {
    int rest = c_col;
    for (int d = num_axes - 1; d >= 0; --d) {
      kernel_offset[d] = rest % kernel_shape[d];
      rest /= kernel_shape[d];
    }
    const int c_im = rest;
    std::fill(col_index.begin(), col_index.end(), 0);
    for (int pos = 0; pos < col_spatial; ++pos) {
      // Locate the image element this column entry reads.
      int im_offset = c_im;
      bool inside = true;
      for (int d = 0; d < num_axes; ++d) {
        const int im_coord = col_index[d] * stride[d] - pad[d] + kernel_offset[d] * dilation[d];
        inside &= InRange(im_coord, im_shape[d + 1]);
        im_offset = im_offset * im_shape[d + 1] + im_coord;
      }
      const int col_offset = c_col * col_spatial + pos;
      if (kToColumns) {
        out[col_offset] = inside ? in[im_offset] : 0.f;
      } else if (inside) {
        out[im_offset] += in[col_offset];
      }
      for (int d = num_axes - 1; d >= 0; --d) {
        if (++col_index[d] < col_shape[d + 1]) break;
        col_index[d] = 0;
      }
    }
  }
}

}  // namespace

void im2col_nd(const float* data_im, int num_spatial_axes, const int* im_shape,
               const int* col_shape, const int* kernel_shape, const int* pad,
               const int* stride, const int* dilation, float* data_col) {
  WalkNd<true>(data_im, num_spatial_axes, im_shape, col_shape, kernel_shape, pad, stride,
               dilation, data_col);
}

void col2im_nd(const float* data_col, int num_spatial_axes, const int* im_shape,
               const int* col_shape, const int* kernel_shape, const int* pad,
               const int* stride, const int* dilation, float* data_im) {
  int im_count = 1;
  for (int i = 0; i <= num_spatial_axes; ++i) im_count *= im_shape[i];
  std::memset(data_im, 0, sizeof(float) * im_count);
  WalkNd<false>(data_col, num_spatial_axes, im_shape, col_shape, kernel_shape, pad, stride,
                dilation, data_im);
}

}  // namespace caffe
