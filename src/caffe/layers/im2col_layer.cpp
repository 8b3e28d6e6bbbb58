#include "caffe/layers/im2col_layer.hpp"

#include <climits>

#include "caffe/layer_factory.hpp"
#include "caffe/util/im2col.hpp"

namespace caffe {

namespace {
const char* const kAxisNames[2] = {"height", "width"};
}  // namespace

void Im2colLayer::ReadPair(const char* name,
                           const ::google::protobuf::RepeatedField<uint32_t>& values, bool has_h,
                           bool has_w, uint32_t h, uint32_t w, int default_value, int pair[2]) {
  uint32_t read[2] = {static_cast<uint32_t>(default_value), static_cast<uint32_t>(default_value)};
  if (has_h || has_w) {
    LAYER_REQUIRE(has_h && has_w) << "convolution_param." << name << "_h and " << name
                                  << "_w must be given together";
    LAYER_REQUIRE(values.empty()) << "convolution_param." << name << " and " << name << "_h/"
                                  << name << "_w are alternatives; found both";
    read[0] = h;
    read[1] = w;
  } else {
    LAYER_REQUIRE(values.size() <= 2)
        << "convolution_param." << name << " must be given 0, 1 or 2 times (once per spatial "
        << "axis), found " << values.size();
    for (int axis = 0; axis < 2 && !values.empty(); ++axis) {
      read[axis] = values.Get(values.size() == 1 ? 0 : axis);
    }
  }
  for (int axis = 0; axis < 2; ++axis) {
    // The fields are unsigned; the im2col helpers compute in int.
    LAYER_REQUIRE(read[axis] <= static_cast<uint32_t>(INT_MAX))
        << "convolution_param." << name << " " << read[axis] << " on the " << kAxisNames[axis]
        << " axis is too large (at most " << INT_MAX << ")";
    pair[axis] = static_cast<int>(read[axis]);
  }
}

void Im2colLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ConvolutionParameter& p = layer_param_.convolution_param();
  const int num_axes = bottom[0]->num_axes();
  const bool axis_in_range = p.axis() >= -num_axes && p.axis() < num_axes;
  const int channel_axis = axis_in_range ? (p.axis() + num_axes) % num_axes : -1;
  LAYER_REQUIRE(num_axes == 4 && channel_axis == 1)
      << "Im2col takes two spatial axes here (N x C x H x W with convolution_param.axis 1); "
      << "bottom '" << bottom_name(0) << "' has shape " << ShapeToString(bottom[0]->shape())
      << " with axis " << p.axis() << " (BVLC's n-d im2col is not supported)";
  ReadPair("kernel", p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(), p.kernel_h(),
           p.kernel_w(), 0, kernel_);
  ReadPair("stride", p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(), p.stride_w(), 1,
           stride_);
  ReadPair("pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0, pad_);
  ReadPair("dilation", p.dilation(), false, false, 0, 0, 1, dilation_);
  for (int axis = 0; axis < 2; ++axis) {
    LAYER_REQUIRE(kernel_[axis] > 0)
        << "kernel size must be positive on the " << kAxisNames[axis] << " axis, found "
        << kernel_[axis]
        << (p.kernel_size_size() == 0 && !p.has_kernel_h() ? " (kernel_size is not set)" : "");
    LAYER_REQUIRE(stride_[axis] > 0) << "stride must be positive, found " << stride_[axis]
                                     << " on the " << kAxisNames[axis] << " axis";
    LAYER_REQUIRE(dilation_[axis] > 0) << "dilation must be positive, found " << dilation_[axis]
                                       << " on the " << kAxisNames[axis] << " axis";
  }
}

void Im2colLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() == 4)
      << "bottom '" << bottom_name(0) << "' has shape " << ShapeToString(bottom[0]->shape())
      << ", expected N x C x H x W as at setup";
  LAYER_REQUIRE(top[0] != bottom[0])
      << "cannot run in place: give top '" << top_name(0) << "' its own name";
  // The im2col helpers index one image with ints.
  LAYER_REQUIRE(bottom[0]->count(1) <= INT_MAX)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape())
      << " is too large: one image has more than " << INT_MAX << " values";
  const int64_t input[2] = {bottom[0]->shape(2), bottom[0]->shape(3)};
  int64_t output[2];
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t extent = static_cast<int64_t>(dilation_[axis]) * (kernel_[axis] - 1) + 1;
    const int64_t padded = input[axis] + 2 * static_cast<int64_t>(pad_[axis]);
    LAYER_REQUIRE(padded <= INT_MAX)
        << "the padded " << kAxisNames[axis] << " " << padded << " of bottom '" << bottom_name(0)
        << "' is too large (at most " << INT_MAX << ")";
    LAYER_REQUIRE(extent <= padded)
        << "kernel " << extent
        << (dilation_[axis] > 1 ? " (dilated " + std::to_string(kernel_[axis]) + " by " +
                                      std::to_string(dilation_[axis]) + ")"
                                : string())
        << " exceeds the padded " << kAxisNames[axis] << " " << padded << " of bottom '"
        << bottom_name(0) << "' (shape " << ShapeToString(bottom[0]->shape()) << ")";
    output[axis] = (padded - extent) / stride_[axis] + 1;
  }
  channels_ = static_cast<int>(bottom[0]->shape(1));
  height_ = static_cast<int>(input[0]);
  width_ = static_cast<int>(input[1]);
  // Channels and both kernel sides are each below 2^31: the first product fits, the
  // second may not.
  int64_t columns = 0;
  LAYER_REQUIRE(!__builtin_mul_overflow(static_cast<int64_t>(channels_) * kernel_[0],
                                        static_cast<int64_t>(kernel_[1]), &columns))
      << "kernel " << kernel_[0] << "x" << kernel_[1] << " over " << channels_
      << " channels makes too many columns";
  top[0]->Reshape({bottom[0]->shape(0), columns, output[0], output[1]});
  bottom_dim_ = bottom[0]->count(1);
  top_dim_ = top[0]->count(1);
}

void Im2colLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t num = bottom[0]->shape(0);
  for (int64_t n = 0; n < num; ++n) {
    im2col(x + n * bottom_dim_, channels_, height_, width_, kernel_[0], kernel_[1], pad_[0],
           pad_[1], stride_[0], stride_[1], dilation_[0], dilation_[1], y + n * top_dim_);
  }
}

void Im2colLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t num = bottom[0]->shape(0);
  for (int64_t n = 0; n < num; ++n) {
    // col2im overwrites the image, summing the entries of every column that read it.
    col2im(dy + n * top_dim_, channels_, height_, width_, kernel_[0], kernel_[1], pad_[0], pad_[1],
           stride_[0], stride_[1], dilation_[0], dilation_[1], dx + n * bottom_dim_);
  }
}

REGISTER_LAYER_CLASS(Im2col);

}  // namespace caffe
