// Unrolls image patches into columns so that convolution becomes one GEMM, and the
// reverse (col2im, accumulating) for the gradient. 2-d fast path plus an n-d form.
#ifndef CAFFE_UTIL_IM2COL_HPP_
#define CAFFE_UTIL_IM2COL_HPP_

namespace caffe {

void im2col(const float* data_im, int channels, int height, int width, int kernel_h,
            int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
            int dilation_w, float* data_col);

void col2im(const float* data_col, int channels, int height, int width, int kernel_h,
            int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
            int dilation_w, float* data_im);

// N spatial axes. im_shape and col_shape include the channel axis first
// (im_shape[0] = channels, col_shape[0] = channels * prod(kernel)).
void im2col_nd(const float* data_im, int num_spatial_axes, const int* im_shape,
               const int* col_shape, const int* kernel_shape, const int* pad,
               const int* stride, const int* dilation, float* data_col);

void col2im_nd(const float* data_col, int num_spatial_axes, const int* im_shape,
               const int* col_shape, const int* kernel_shape, const int* pad,
               const int* stride, const int* dilation, float* data_im);

#ifdef USE_CUDA
// Device forms of im2col / col2im (2-d only), same layouts and arguments; col2im_gpu
// overwrites data_im like col2im. Both run on the default stream.
void im2col_gpu(const float* data_im, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, float* data_col);

void col2im_gpu(const float* data_col, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, float* data_im);
#endif

}  // namespace caffe

#endif  // CAFFE_UTIL_IM2COL_HPP_
