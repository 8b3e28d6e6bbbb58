// Pooling on oneDNN (engine: DNNL) for MAX and AVE with one top; STOCHASTIC, the MAX
// mask top, and geometries oneDNN cannot express run the reference PoolingLayer code.
// So does a layer the DEFAULT engine sent here when oneDNN offers only its reference
// kernel for the plain layout on this CPU (simple_nchw on AVX2 machines, several
// times slower than PoolingLayer's loops); engine: DNNL, or -engine DNNL, keeps it.
// Caffe's CEIL rounding becomes extra right/bottom padding so the output sizes are
// Caffe's. AVE divides by the window clipped to the padded image (padding counts as
// zeros): that is oneDNN's include-padding average wherever a window stays inside the
// symmetric padding; the windows CEIL pushes further out are rescaled afterwards.
#ifndef CAFFE_LAYERS_DNNL_POOLING_LAYER_HPP_
#define CAFFE_LAYERS_DNNL_POOLING_LAYER_HPP_

#ifdef USE_DNNL

#include <string>

#include "caffe/layers/pooling_layer.hpp"
#include "caffe/util/dnnl_context.hpp"

namespace caffe {

class DnnlPoolingLayer : public PoolingLayer {
 public:
  explicit DnnlPoolingLayer(const LayerParameter& param) : PoolingLayer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // False when the current geometry runs the reference code.
  bool uses_dnnl() const { return supported_; }
  // oneDNN's name for the forward kernel it picked for the current geometry (e.g.
  // "jit:avx2", "simple_nchw:any"); empty when oneDNN was not asked.
  const std::string& dnnl_implementation() const { return implementation_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  // Fills the geometry members from the parameters and the bottom; false when
  // oneDNN cannot produce Caffe's result for it.
  bool ComputeGeometry(const vector<Blob*>& bottom, const vector<Blob*>& top);
  void Build();
  // Multiplies every plane of `data` (planes x pooled plane) by average_scale_.
  void ApplyAverageScale(const float* in, float* out, int64_t planes) const;

  // Whether the engine came from the DEFAULT rule, which may pass on oneDNN.
  bool engine_by_default() const;

  bool supported_ = false;
  std::string implementation_;
  vector<int64_t> built_shape_;
  int built_threads_ = 0;
  size_t built_tops_ = 0;

  bool max_ = true;
  dnnl::memory::dims src_dims_, dst_dims_, kernel_, strides_, padding_l_, padding_r_;
  // Caffe's divisor over oneDNN's (kernel area) for each output position of a plane;
  // empty when every window is a full kernel inside the padded image.
  vector<float> average_scale_;
  Blob scaled_diff_;  // top diff times average_scale_, what oneDNN's backward reads

  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_, workspace_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_LAYERS_DNNL_POOLING_LAYER_HPP_
