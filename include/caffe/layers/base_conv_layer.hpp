// What Convolution and Deconvolution share: reading ConvolutionParameter (kernel, pad,
// stride, dilation per spatial axis; group; bias), the weight blobs, and the per-image
// im2col + GEMM products. Deconvolution is convolution with the roles of input and
// output swapped, so both are written against one "image side" (the blob im2col reads)
// and one "column side" (the blob the GEMM writes), chosen by reverse_dimensions().
#ifndef CAFFE_LAYERS_BASE_CONV_LAYER_HPP_
#define CAFFE_LAYERS_BASE_CONV_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class BaseConvolutionLayer : public Layer {
 public:
  explicit BaseConvolutionLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;

  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  // Every bottom is convolved with the same weights into its own top.
  bool EqualNumBottomTopBlobs() const override { return true; }

  // Spatial geometry, one entry per spatial axis (exposed for tests and engines).
  const vector<int>& kernel_shape() const { return kernel_shape_; }
  const vector<int>& stride() const { return stride_; }
  const vector<int>& pad() const { return pad_; }
  const vector<int>& dilation() const { return dilation_; }
  const vector<int>& output_shape() const { return output_shape_; }

 protected:
  // False for convolution; true for deconvolution, whose forward pass is the
  // backward-data pass of a convolution.
  virtual bool reverse_dimensions() const = 0;
  // Fills output_shape_ (spatial sizes of the top) from the bottom's spatial sizes,
  // throwing caffe::Error when the geometry admits no output.
  virtual void ComputeOutputShape(const vector<int64_t>& input_spatial) = 0;

  // One image (one item of the batch), on the host or, for Mode::GPU, on device
  // pointers with cuBLAS and the device im2col (one code for both; see
  // mode_math.hpp). `input` is on the image side, `output` on the column side.
  // Forward writes (overwrites) output; weight gradients accumulate.
  void ForwardGemm(Mode mode, const float* input, const float* weights, float* output,
                   bool skip_im2col = false);
  void ForwardBias(Mode mode, float* output, const float* bias);
  // input_diff = W^T * output_diff, folded back to the image side (overwrites).
  void BackwardGemm(Mode mode, const float* output_diff, const float* weights,
                    float* input_diff);
  // weights_diff += output_diff * im2col(input)^T.
  void WeightGemm(Mode mode, const float* input, const float* output_diff,
                  float* weights_diff);
  void BackwardBias(Mode mode, float* bias_diff, const float* output_diff);
  // Only the 2-d im2col exists on the device (1x1 kernels need none): GPU callers run
  // the CPU path otherwise.
  bool HasGpuPath() const { return is_1x1_ || (num_spatial_axes_ == 2 && !force_nd_im2col_); }

  int num_spatial_axes_ = 0;
  int channel_axis_ = 1;
  vector<int> kernel_shape_, stride_, pad_, dilation_;
  vector<int> output_shape_;  // top spatial sizes
  bool bias_term_ = true;
  bool is_1x1_ = false;  // column buffer == image: im2col is skipped
  bool force_nd_im2col_ = false;

  int num_ = 0;          // images per bottom (product of axes before channel_axis)
  int channels_ = 0;     // bottom channels
  int num_output_ = 0;   // top channels
  int group_ = 1;
  int64_t bottom_dim_ = 0;  // elements of one image in the bottom
  int64_t top_dim_ = 0;     // elements of one image in the top
  int out_spatial_dim_ = 0;  // top plane size (the bias is broadcast over it)

 private:
  // The im2col columns of one image: a per-thread buffer shared by the layers on the
  // host, this layer's col_buffer_ on the device. Valid until the call returns.
  float* ColumnBuffer(Mode mode);
  void Im2col(Mode mode, const float* image, float* columns);
  void Col2im(Mode mode, const float* columns, float* image);
  vector<int64_t> ExpectedWeightShape() const;
  // One value per spatial axis from a repeated field (empty: default; one value:
  // every axis) or, for 2-d only, from the _h/_w pair.
  vector<int> SpatialValues(const char* name,
                            const ::google::protobuf::RepeatedField<uint32_t>& values,
                            bool has_h, bool has_w, uint32_t h, uint32_t w, int default_value);

  // GEMM geometry: the column side has conv_out_channels_ channels of
  // conv_out_spatial_dim_ positions; each group multiplies a
  // (conv_out_channels_/group_) x kernel_dim_ weight slice by a
  // kernel_dim_ x conv_out_spatial_dim_ column slice.
  int conv_out_channels_ = 0;
  int conv_in_channels_ = 0;
  int conv_out_spatial_dim_ = 0;
  int kernel_dim_ = 0;
  int64_t weight_offset_ = 0;  // per group, in the weights
  int64_t col_offset_ = 0;     // per group, in the column buffer
  int64_t output_offset_ = 0;  // per group, in the column-side output
  // The image side's shape for im2col: channels then spatial sizes.
  vector<int> conv_input_shape_;
  // The column buffer's shape: channels * prod(kernel), then column-side spatial sizes.
  vector<int> col_buffer_shape_;
  Blob col_buffer_;  // device mode only: host mode uses the thread's shared columns
  Blob bias_multiplier_;  // ones over the top plane, so the bias add is one GEMM
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_BASE_CONV_LAYER_HPP_
