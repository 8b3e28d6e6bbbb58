// What the oneDNN convolution and deconvolution layers share: Caffe's 2-d geometry
// (stride, dilation counted from 1, symmetric padding) in oneDNN's terms, the "let the
// primitive choose" memory descriptor, and layout bridges whose reorder buffers are
// shared by all layers on a thread. Only built with USE_DNNL.
#ifndef CAFFE_UTIL_DNNL_CONV_COMMON_HPP_
#define CAFFE_UTIL_DNNL_CONV_COMMON_HPP_

#ifdef USE_DNNL

#include <dnnl.hpp>

#include "caffe/util/error.hpp"

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

// float32 N x C x H x W in Caffe's plain layout (block 0) or a channel-blocked one
// (Blob::channel_block: 8 or 16, oneDNN's aBcd8b / aBcd16b).
inline dnnl::memory::desc ActivationDesc(const dnnl::memory::dims& dims, int block) {
  using tag = dnnl::memory::format_tag;
  const tag layout = block == 16 ? tag::aBcd16b : block == 8 ? tag::aBcd8b : tag::nchw;
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, layout);
}

// The channel block of `desc` when it is one of ActivationDesc's blocked layouts for
// `dims`, else 0.
inline int ChannelBlockOf(const dnnl::memory::desc& desc, const dnnl::memory::dims& dims) {
  for (int block : {16, 8}) {
    if (desc == ActivationDesc(dims, block)) return block;
  }
  return 0;
}

// A reorder buffer only lives from the reorder to the end of the primitive that uses
// it, so one buffer per role (slot) can serve every layer on a thread: memory is then
// a few times the largest tensor, not several activation-sized buffers per layer
// (ResNet-50 at batch 8 kept 3.2 GB of them). Slots grow to the largest request and
// are never shrunk. Within one primitive call every tensor needs its own slot.
enum DnnlScratchSlot {
  kScratchSrc = 0,
  kScratchDst,
  kScratchDiffSrc,
  kScratchWeights,
  kScratchDiffWeights,
  kScratchWeightGradient,  // the weight gradient before it is added to the diff
  kNumScratchSlots
};
// The calling thread's buffer for `slot`, at least `floats` long (64-byte aligned).
// The pointer stays valid until the next call for the same slot with a larger size.
float* DnnlScratch(DnnlScratchSlot slot, size_t floats);

// Like DnnlLayoutBridge (dnnl_context.hpp), but the buffer in the primitive's layout
// is the thread's scratch slot instead of a buffer of its own.
class DnnlScratchBridge {
 public:
  void Init(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
            DnnlScratchSlot slot);
  bool reorders() const { return !same_; }
  // Memory for the primitive to read, holding `data` (reordered when needed).
  dnnl::memory Read(const float* data);
  // Memory for the primitive to write; call Commit(data) after it ran.
  dnnl::memory Write(float* data);
  // Moves what the primitive wrote into `data` (no-op when no reorder is needed).
  void Commit(float* data);

 private:
  void PointAtScratch();

  bool same_ = true;
  DnnlScratchSlot slot_ = kScratchSrc;
  size_t floats_ = 0;
  dnnl::memory user_;
  dnnl::memory internal_;
  dnnl::reorder to_internal_;
  dnnl::reorder to_user_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_UTIL_DNNL_CONV_COMMON_HPP_
