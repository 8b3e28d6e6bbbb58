// What the oneDNN convolution and deconvolution layers share: Caffe's 2-d geometry
// (stride, dilation counted from 1, symmetric padding) in oneDNN's terms, and the
// "let the primitive choose" memory descriptor. Only built with USE_DNNL.
#ifndef CAFFE_UTIL_DNNL_CONV_GEOMETRY_HPP_
#define CAFFE_UTIL_DNNL_CONV_GEOMETRY_HPP_

#ifdef USE_DNNL

#include <dnnl.hpp>

#include "caffe/common.hpp"

namespace caffe {

struct DnnlConvGeometry {
  dnnl::memory::dims strides, dilates, padding_l, padding_r;
};

// oneDNN counts dilation from 0 (dense), Caffe from 1. Caffe pads both sides alike,
// and its floor rounding of the output size is oneDNN's rule too, so the output
// sizes agree for convolution and (with Caffe's formula) deconvolution.
inline DnnlConvGeometry MakeDnnlConvGeometry(const vector<int>& stride, const vector<int>& dilation,
                                             const vector<int>& pad) {
  DnnlConvGeometry g;
  g.strides = {stride[0], stride[1]};
  g.dilates = {dilation[0] - 1, dilation[1] - 1};
  g.padding_l = {pad[0], pad[1]};
  g.padding_r = g.padding_l;
  return g;
}

// float32 with the layout left to the primitive (format_tag::any).
inline dnnl::memory::desc AnyLayoutDesc(const dnnl::memory::dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_UTIL_DNNL_CONV_GEOMETRY_HPP_
