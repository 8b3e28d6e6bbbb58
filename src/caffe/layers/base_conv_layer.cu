// Device forms of BaseConvolutionLayer's per-image products: the same GEMM shapes as
// base_conv_layer.cpp, with cuBLAS (math::gpu_*) and im2col_gpu. Pointers are device
// pointers; the column buffer and the bias multiplier are read on the device.
#include "caffe/layers/base_conv_layer.hpp"
#include "caffe/util/im2col.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void BaseConvolutionLayer::Im2colGpu(const float* image, float* columns) {
  CHECK(HasGpuPath()) << "no device im2col for " << num_spatial_axes_ << " spatial axes";
  im2col_gpu(image, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
             kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
             dilation_[0], dilation_[1], columns);
}

void BaseConvolutionLayer::Col2imGpu(const float* columns, float* image) {
  CHECK(HasGpuPath()) << "no device col2im for " << num_spatial_axes_ << " spatial axes";
  col2im_gpu(columns, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
             kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
             dilation_[0], dilation_[1], image);
}

void BaseConvolutionLayer::ForwardGemmGpu(const float* input, const float* weights,
                                          float* output, bool skip_im2col) {
  const float* columns = input;
  if (!is_1x1_) {
    if (!skip_im2col) Im2colGpu(input, col_buffer_.mutable_gpu_data());
    columns = col_buffer_.gpu_data();
  }
  for (int g = 0; g < group_; ++g) {
    math::gpu_gemm(math::NoTrans, math::NoTrans, conv_out_channels_ / group_,
                   conv_out_spatial_dim_, kernel_dim_, 1.f, weights + weight_offset_ * g,
                   columns + col_offset_ * g, 0.f, output + output_offset_ * g);
  }
}

void BaseConvolutionLayer::ForwardBiasGpu(float* output, const float* bias) {
  math::gpu_gemm(math::NoTrans, math::NoTrans, num_output_, out_spatial_dim_, 1, 1.f, bias,
                 bias_multiplier_.gpu_data(), 1.f, output);
}

void BaseConvolutionLayer::BackwardGemmGpu(const float* output_diff, const float* weights,
                                           float* input_diff) {
  // A 1x1 convolution's column buffer is the image itself, so write straight into it.
  float* columns = is_1x1_ ? input_diff : col_buffer_.mutable_gpu_data();
  for (int g = 0; g < group_; ++g) {
    math::gpu_gemm(math::Trans, math::NoTrans, kernel_dim_, conv_out_spatial_dim_,
                   conv_out_channels_ / group_, 1.f, weights + weight_offset_ * g,
                   output_diff + output_offset_ * g, 0.f, columns + col_offset_ * g);
  }
  if (!is_1x1_) Col2imGpu(columns, input_diff);
}

void BaseConvolutionLayer::WeightGemmGpu(const float* input, const float* output_diff,
                                         float* weights_diff) {
  const float* columns = input;
  if (!is_1x1_) {
    Im2colGpu(input, col_buffer_.mutable_gpu_data());
    columns = col_buffer_.gpu_data();
  }
  for (int g = 0; g < group_; ++g) {
    math::gpu_gemm(math::NoTrans, math::Trans, conv_out_channels_ / group_, kernel_dim_,
                   conv_out_spatial_dim_, 1.f, output_diff + output_offset_ * g,
                   columns + col_offset_ * g, 1.f, weights_diff + weight_offset_ * g);
  }
}

void BaseConvolutionLayer::BackwardBiasGpu(float* bias_diff, const float* output_diff) {
  math::gpu_gemv(math::NoTrans, num_output_, out_spatial_dim_, 1.f, output_diff,
                 bias_multiplier_.gpu_data(), 1.f, bias_diff);
}

}  // namespace caffe
