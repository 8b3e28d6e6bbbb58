// Im2col: unrolls every image patch a convolution would read into a column, BVLC's
// `Im2col`, with the geometry of convolution_param (kernel_size or kernel_h/kernel_w,
// pad, stride, dilation; num_output, group, bias and fillers are not read). Bottom
// N x C x H x W; top N x (C kh kw) x H_out x W_out, H_out and W_out as Convolution's,
// where channel (c kh + i) kw + j of output position (y, x) holds the input at row
// y stride_h - pad_h + i dilation_h, column x stride_w - pad_w + j dilation_w of
// channel c (0 in the padding). Backward sums each column entry's gradient back into
// the input it came from (col2im). Two spatial axes only: BVLC's n-d form is refused.
#ifndef CAFFE_LAYERS_IM2COL_LAYER_HPP_
#define CAFFE_LAYERS_IM2COL_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class Im2colLayer : public Layer {
 public:
  explicit Im2colLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Im2col"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  // One value per spatial axis (height, width) from the repeated field `values` (none:
  // `default_value`; one: both axes; two: height then width) or from its _h/_w pair.
  void ReadPair(const char* name, const ::google::protobuf::RepeatedField<uint32_t>& values,
                bool has_h, bool has_w, uint32_t h, uint32_t w, int default_value, int pair[2]);

  int kernel_[2] = {0, 0};
  int pad_[2] = {0, 0};
  int stride_[2] = {1, 1};
  int dilation_[2] = {1, 1};
  int channels_ = 0, height_ = 0, width_ = 0;
  int64_t bottom_dim_ = 0;  // values of one image in the bottom
  int64_t top_dim_ = 0;     // values of one image's columns in the top
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_IM2COL_LAYER_HPP_
