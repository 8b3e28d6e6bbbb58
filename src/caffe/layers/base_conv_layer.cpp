#include "caffe/layers/base_conv_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/util/im2col.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/mode_math.hpp"

namespace caffe {

vector<int> BaseConvolutionLayer::SpatialValues(
    const char* name, const ::google::protobuf::RepeatedField<uint32_t>& values, bool has_h,
    bool has_w, uint32_t h, uint32_t w, int default_value) {
  if (has_h || has_w) {
    LAYER_REQUIRE(has_h && has_w)
        << "convolution_param." << name << "_h and " << name << "_w must be given together";
    LAYER_REQUIRE(values.empty()) << "convolution_param." << name << " and " << name
                                  << "_h/" << name << "_w are alternatives; found both";
    LAYER_REQUIRE(num_spatial_axes_ == 2)
        << "convolution_param." << name << "_h/" << name << "_w need 2 spatial axes, found "
        << num_spatial_axes_;
    return {static_cast<int>(h), static_cast<int>(w)};
  }
  const int n = values.size();
  LAYER_REQUIRE(n == 0 || n == 1 || n == num_spatial_axes_)
      << "convolution_param." << name << " must be given 0, 1 or " << num_spatial_axes_
      << " times (once per spatial axis), found " << n;
  vector<int> result(num_spatial_axes_, default_value);
  for (int i = 0; i < num_spatial_axes_ && n > 0; ++i) {
    result[i] = static_cast<int>(values.Get(n == 1 ? 0 : i));
  }
  return result;
}

void BaseConvolutionLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ConvolutionParameter& p = layer_param_.convolution_param();
  const int num_axes = bottom[0]->num_axes();
  LAYER_REQUIRE(p.axis() >= -num_axes && p.axis() < num_axes)
      << "convolution_param.axis " << p.axis() << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape());
  channel_axis_ = bottom[0]->CanonicalAxisIndex(p.axis());
  num_spatial_axes_ = num_axes - channel_axis_ - 1;
  LAYER_REQUIRE(num_spatial_axes_ >= 1)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape())
      << " has no spatial axis after the channel axis " << channel_axis_;
  force_nd_im2col_ = p.force_nd_im2col();

  kernel_shape_ = SpatialValues("kernel", p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(),
                                p.kernel_h(), p.kernel_w(), 0);
  stride_ = SpatialValues("stride", p.stride(), p.has_stride_h(), p.has_stride_w(),
                          p.stride_h(), p.stride_w(), 1);
  pad_ = SpatialValues("pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0);
  dilation_ = SpatialValues("dilation", p.dilation(), false, false, 0, 0, 1);
  for (int i = 0; i < num_spatial_axes_; ++i) {
    LAYER_REQUIRE(kernel_shape_[i] > 0)
        << "kernel size must be positive on every spatial axis, found "
        << kernel_shape_[i] << " on axis " << channel_axis_ + 1 + i
        << (p.kernel_size_size() == 0 && !p.has_kernel_h() ? " (kernel_size is not set)" : "");
    LAYER_REQUIRE(stride_[i] > 0) << "stride must be positive, found " << stride_[i]
                                  << " on axis " << channel_axis_ + 1 + i;
    LAYER_REQUIRE(dilation_[i] > 0) << "dilation must be positive, found " << dilation_[i]
                                    << " on axis " << channel_axis_ + 1 + i;
  }
  is_1x1_ = true;
  for (int i = 0; i < num_spatial_axes_; ++i) {
    is_1x1_ &= kernel_shape_[i] == 1 && stride_[i] == 1 && pad_[i] == 0;
  }

  channels_ = static_cast<int>(bottom[0]->shape(channel_axis_));
  LAYER_REQUIRE(p.num_output() > 0)
      << "convolution_param.num_output must be positive, found " << p.num_output();
  num_output_ = static_cast<int>(p.num_output());
  LAYER_REQUIRE(p.group() > 0) << "convolution_param.group must be positive";
  group_ = static_cast<int>(p.group());
  LAYER_REQUIRE(channels_ % group_ == 0)
      << "group " << group_ << " does not divide " << channels_ << " input channels";
  LAYER_REQUIRE(num_output_ % group_ == 0)
      << "group " << group_ << " does not divide num_output " << num_output_;
  if (reverse_dimensions()) {
    conv_out_channels_ = channels_;
    conv_in_channels_ = num_output_;
  } else {
    conv_out_channels_ = num_output_;
    conv_in_channels_ = channels_;
  }
  bias_term_ = p.bias_term();

  const vector<int64_t> weight_shape = ExpectedWeightShape();
  if (!blobs_.empty()) {
    // Weights came with the layer parameter; they must fit this geometry.
    LAYER_REQUIRE(blobs_.size() == (bias_term_ ? 2u : 1u))
        << "expected " << (bias_term_ ? 2 : 1) << " weight blob(s), found " << blobs_.size();
    LAYER_REQUIRE(blobs_[0]->shape() == weight_shape)
        << "weight shape " << ShapeToString(blobs_[0]->shape()) << ", expected "
        << ShapeToString(weight_shape);
    if (bias_term_) {
      LAYER_REQUIRE(blobs_[1]->count() == num_output_)
          << "bias shape " << ShapeToString(blobs_[1]->shape()) << ", expected " << num_output_;
    }
  } else {
    blobs_.push_back(std::make_shared<Blob>(weight_shape));
    FillBlob(p.weight_filler(), blobs_[0].get(), context().rng());
    if (bias_term_) {
      blobs_.push_back(std::make_shared<Blob>(vector<int64_t>{num_output_}));
      FillBlob(p.bias_filler(), blobs_[1].get(), context().rng());
    }
  }
  kernel_dim_ = static_cast<int>(blobs_[0]->count(1));
  weight_offset_ = static_cast<int64_t>(conv_out_channels_) * kernel_dim_ / group_;
  param_propagate_down_.assign(blobs_.size(), true);
}

vector<int64_t> BaseConvolutionLayer::ExpectedWeightShape() const {
  vector<int64_t> shape{conv_out_channels_, conv_in_channels_ / group_};
  shape.insert(shape.end(), kernel_shape_.begin(), kernel_shape_.end());
  return shape;
}

void BaseConvolutionLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int first_spatial_axis = channel_axis_ + 1;
  LAYER_REQUIRE(bottom[0]->num_axes() == first_spatial_axis + num_spatial_axes_)
      << "bottom '" << bottom_name(0) << "' has shape " << ShapeToString(bottom[0]->shape())
      << ", expected " << first_spatial_axis + num_spatial_axes_
      << " axes as at setup (the number of axes cannot change)";
  LAYER_REQUIRE(bottom[0]->shape(channel_axis_) == channels_)
      << "bottom '" << bottom_name(0) << "' has " << bottom[0]->shape(channel_axis_)
      << " channels (shape " << ShapeToString(bottom[0]->shape()) << "), the weights expect "
      << channels_;
  for (size_t i = 1; i < bottom.size(); ++i) {
    LAYER_REQUIRE(bottom[i]->shape() == bottom[0]->shape())
        << "all bottoms must have the same shape: '" << bottom_name(static_cast<int>(i))
        << "' is " << ShapeToString(bottom[i]->shape()) << ", '" << bottom_name(0) << "' is "
        << ShapeToString(bottom[0]->shape());
  }
  num_ = static_cast<int>(bottom[0]->count(0, channel_axis_));
  const vector<int64_t>& in_shape = bottom[0]->shape();
  const vector<int64_t> input_spatial(in_shape.begin() + first_spatial_axis, in_shape.end());
  ComputeOutputShape(input_spatial);

  vector<int64_t> top_shape(in_shape.begin(), in_shape.begin() + channel_axis_);
  top_shape.push_back(num_output_);
  top_shape.insert(top_shape.end(), output_shape_.begin(), output_shape_.end());
  for (Blob* t : top) t->Reshape(top_shape);

  bottom_dim_ = bottom[0]->count(channel_axis_);
  top_dim_ = top[0]->count(channel_axis_);
  out_spatial_dim_ = static_cast<int>(top[0]->count(first_spatial_axis));
  // The image side is what im2col reads: the bottom for convolution, the top for
  // deconvolution; the column side has the other blob's spatial size.
  const bool reverse = reverse_dimensions();
  const Blob& image_side = reverse ? *top[0] : *bottom[0];
  const Blob& column_side = reverse ? *bottom[0] : *top[0];
  conv_out_spatial_dim_ = static_cast<int>(column_side.count(first_spatial_axis));
  conv_input_shape_.assign(1, conv_in_channels_);
  col_buffer_shape_.assign(1, kernel_dim_ * group_);
  for (int i = 0; i < num_spatial_axes_; ++i) {
    conv_input_shape_.push_back(static_cast<int>(image_side.shape(first_spatial_axis + i)));
    col_buffer_shape_.push_back(static_cast<int>(column_side.shape(first_spatial_axis + i)));
  }
  col_offset_ = static_cast<int64_t>(kernel_dim_) * conv_out_spatial_dim_;
  output_offset_ = static_cast<int64_t>(conv_out_channels_) * conv_out_spatial_dim_ / group_;
  if (!is_1x1_) {
    col_buffer_.Reshape({static_cast<int64_t>(kernel_dim_) * group_, conv_out_spatial_dim_});
  }
  // Refilled only when its size changes: rewriting it on every pass would also send it
  // to the device again on every pass in GPU mode.
  if (bias_term_ && bias_multiplier_.count() != out_spatial_dim_) {
    bias_multiplier_.Reshape({out_spatial_dim_});
    math::set(out_spatial_dim_, 1.f, bias_multiplier_.mutable_cpu_data());
  }
}

void BaseConvolutionLayer::Im2col(Mode mode, const float* image, float* columns) {
  const bool planar = !force_nd_im2col_ && num_spatial_axes_ == 2;
#ifdef USE_CUDA
  if (mode == Mode::GPU) {
    CHECK(planar) << "no device im2col for " << num_spatial_axes_ << " spatial axes";
    im2col_gpu(image, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
               kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
               dilation_[0], dilation_[1], columns);
    return;
  }
#endif
  CHECK(mode == Mode::CPU) << "a GPU-mode im2col in a CPU-only build";
  if (planar) {
    im2col(image, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
           kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
           dilation_[0], dilation_[1], columns);
  } else {
    im2col_nd(image, num_spatial_axes_, conv_input_shape_.data(), col_buffer_shape_.data(),
              kernel_shape_.data(), pad_.data(), stride_.data(), dilation_.data(), columns);
  }
}

void BaseConvolutionLayer::Col2im(Mode mode, const float* columns, float* image) {
  const bool planar = !force_nd_im2col_ && num_spatial_axes_ == 2;
#ifdef USE_CUDA
  if (mode == Mode::GPU) {
    CHECK(planar) << "no device col2im for " << num_spatial_axes_ << " spatial axes";
    col2im_gpu(columns, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
               kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
               dilation_[0], dilation_[1], image);
    return;
  }
#endif
  CHECK(mode == Mode::CPU) << "a GPU-mode col2im in a CPU-only build";
  if (planar) {
    col2im(columns, conv_in_channels_, conv_input_shape_[1], conv_input_shape_[2],
           kernel_shape_[0], kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1],
           dilation_[0], dilation_[1], image);
  } else {
    col2im_nd(columns, num_spatial_axes_, conv_input_shape_.data(), col_buffer_shape_.data(),
              kernel_shape_.data(), pad_.data(), stride_.data(), dilation_.data(), image);
  }
}

float* BaseConvolutionLayer::ColumnBuffer(Mode mode) {
  if (mode != Mode::CPU) return MutableDataOn(mode, &col_buffer_);
  // On the host, one buffer per thread serves every reference-engine convolution that
  // runs on it, sized to the largest: a layer fills and reads its columns within one
  // Forward or Backward call, and a thread runs one layer at a time. (Device mode keeps
  // each layer's own buffer, in device memory.)
  thread_local vector<float> columns;
  const size_t need = static_cast<size_t>(kernel_dim_) * group_ * conv_out_spatial_dim_;
  if (columns.size() < need) {
    vector<float>().swap(columns);  // free the smaller buffer first: no copy, no two at once
    ResizeScratch(&columns, static_cast<int64_t>(need), "the im2col column buffer");
  }
  return columns.data();
}

void BaseConvolutionLayer::ForwardGemm(Mode mode, const float* input, const float* weights,
                                       float* output, bool skip_im2col) {
  const float* columns = input;
  if (!is_1x1_) {
    float* buffer = ColumnBuffer(mode);
    if (!skip_im2col) Im2col(mode, input, buffer);
    columns = buffer;
  }
  for (int g = 0; g < group_; ++g) {
    math::gemm(mode, math::NoTrans, math::NoTrans, conv_out_channels_ / group_,
               conv_out_spatial_dim_, kernel_dim_, 1.f, weights + weight_offset_ * g,
               columns + col_offset_ * g, 0.f, output + output_offset_ * g);
  }
}

void BaseConvolutionLayer::ForwardBias(Mode mode, float* output, const float* bias) {
  math::gemm(mode, math::NoTrans, math::NoTrans, num_output_, out_spatial_dim_, 1, 1.f, bias,
             DataOn(mode, bias_multiplier_), 1.f, output);
}

void BaseConvolutionLayer::BackwardGemm(Mode mode, const float* output_diff,
                                        const float* weights, float* input_diff) {
  // A 1x1 convolution's column buffer is the image itself, so write straight into it.
  float* columns = is_1x1_ ? input_diff : ColumnBuffer(mode);
  for (int g = 0; g < group_; ++g) {
    math::gemm(mode, math::Trans, math::NoTrans, kernel_dim_, conv_out_spatial_dim_,
               conv_out_channels_ / group_, 1.f, weights + weight_offset_ * g,
               output_diff + output_offset_ * g, 0.f, columns + col_offset_ * g);
  }
  if (!is_1x1_) Col2im(mode, columns, input_diff);
}

void BaseConvolutionLayer::WeightGemm(Mode mode, const float* input, const float* output_diff,
                                      float* weights_diff) {
  const float* columns = input;
  if (!is_1x1_) {
    float* buffer = ColumnBuffer(mode);
    Im2col(mode, input, buffer);
    columns = buffer;
  }
  for (int g = 0; g < group_; ++g) {
    math::gemm(mode, math::NoTrans, math::Trans, conv_out_channels_ / group_, kernel_dim_,
               conv_out_spatial_dim_, 1.f, output_diff + output_offset_ * g,
               columns + col_offset_ * g, 1.f, weights_diff + weight_offset_ * g);
  }
}

void BaseConvolutionLayer::BackwardBias(Mode mode, float* bias_diff, const float* output_diff) {
  math::gemv(mode, math::NoTrans, num_output_, out_spatial_dim_, 1.f, output_diff,
             DataOn(mode, bias_multiplier_), 1.f, bias_diff);
}

}  // namespace caffe
