#ifdef USE_DNNL

#include "caffe/layers/dnnl_deconvolution_layer.hpp"

#include "caffe/util/dnnl_conv_common.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

using dnnl::memory;

bool DnnlDeconvolutionLayer::Supported(const vector<Blob*>& bottom) const {
  return num_spatial_axes_ == 2 && channel_axis_ == 1 && bottom[0]->num_axes() == 4 &&
         bottom[0]->count() > 0;
}

void DnnlDeconvolutionLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  DeconvolutionLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_) return;
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  backward_built_ = false;
  supported_ = Supported(bottom);
  if (!supported_) {
    LOG(INFO) << "layer '" << name() << "' (Deconvolution, DNNL): bottom shape "
              << ShapeToString(bottom[0]->shape()) << " runs the reference engine";
    return;
  }
  const int64_t n = bottom[0]->shape(0);
  // oneDNN's deconvolution: src is the bottom (channels_), dst the top (num_output_),
  // weights are dims {out, in, kh, kw} (grouped: {g, out/g, in/g, kh, kw}).
  src_dims_ = {n, channels_, bottom[0]->shape(2), bottom[0]->shape(3)};
  dst_dims_ = {n, num_output_, output_shape_[0], output_shape_[1]};
  if (group_ == 1) {
    weights_dims_ = {num_output_, channels_, kernel_shape_[0], kernel_shape_[1]};
    blob_weights_md_ =
        memory::desc(weights_dims_, memory::data_type::f32, memory::format_tag::iohw);
  } else {
    weights_dims_ = {group_, num_output_ / group_, channels_ / group_, kernel_shape_[0],
                     kernel_shape_[1]};
    blob_weights_md_ =
        memory::desc(weights_dims_, memory::data_type::f32, memory::format_tag::giohw);
  }
  bias_dims_ = {num_output_};
  const DnnlConvGeometry geometry = MakeDnnlConvGeometry(stride_, dilation_, pad_);
  strides_ = geometry.strides;
  dilates_ = geometry.dilates;
  padding_l_ = geometry.padding_l;
  padding_r_ = geometry.padding_r;
  try {
    BuildForward();
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << name() << "' (Deconvolution, DNNL): oneDNN refused the "
                 << "geometry (" << e.what() << "); running the reference engine";
    supported_ = false;
  }
}

void DnnlDeconvolutionLayer::BuildForward() {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  const memory::desc bias_md = bias_term_ ? PlainDesc(bias_dims_) : memory::desc();
  dnnl::deconvolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct,
      AnyLayoutDesc(src_dims_), AnyLayoutDesc(weights_dims_), bias_md, AnyLayoutDesc(dst_dims_),
      strides_, dilates_, padding_l_, padding_r_);
  fwd_pd_ = dnnl::deconvolution_forward::primitive_desc(desc, engine);
  fwd_ = dnnl::deconvolution_forward(fwd_pd_);
  fwd_src_.Init(PlainDesc(src_dims_), fwd_pd_.src_desc(), kScratchSrc);
  fwd_weights_.Init(blob_weights_md_, fwd_pd_.weights_desc(), kScratchWeights);
  fwd_dst_.Init(PlainDesc(dst_dims_), fwd_pd_.dst_desc(), kScratchDst);
  bias_ = bias_term_ ? memory(bias_md, engine, DNNL_MEMORY_NONE) : memory();
}

void DnnlDeconvolutionLayer::BuildBackward() {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  dnnl::deconvolution_backward_data::desc data_desc(
      dnnl::algorithm::deconvolution_direct, AnyLayoutDesc(src_dims_), AnyLayoutDesc(weights_dims_),
      AnyLayoutDesc(dst_dims_), strides_, dilates_, padding_l_, padding_r_);
  dnnl::deconvolution_backward_data::primitive_desc data_pd(data_desc, engine, fwd_pd_);
  bwd_data_ = dnnl::deconvolution_backward_data(data_pd);
  bwd_data_diff_dst_.Init(PlainDesc(dst_dims_), data_pd.diff_dst_desc(), kScratchDst);
  bwd_data_weights_.Init(blob_weights_md_, data_pd.weights_desc(), kScratchWeights);
  bwd_data_diff_src_.Init(PlainDesc(src_dims_), data_pd.diff_src_desc(), kScratchDiffSrc);

  const memory::desc bias_md = bias_term_ ? PlainDesc(bias_dims_) : memory::desc();
  dnnl::deconvolution_backward_weights::desc weights_desc(
      dnnl::algorithm::deconvolution_direct, AnyLayoutDesc(src_dims_), AnyLayoutDesc(weights_dims_),
      bias_md, AnyLayoutDesc(dst_dims_), strides_, dilates_, padding_l_, padding_r_);
  dnnl::deconvolution_backward_weights::primitive_desc weights_pd(weights_desc, engine, fwd_pd_);
  bwd_weights_ = dnnl::deconvolution_backward_weights(weights_pd);
  bwd_data_reuses_diff_dst_ = data_pd.diff_dst_desc() == weights_pd.diff_dst_desc();
  bwd_weights_src_.Init(PlainDesc(src_dims_), weights_pd.src_desc(), kScratchSrc);
  bwd_weights_diff_dst_.Init(PlainDesc(dst_dims_), weights_pd.diff_dst_desc(), kScratchDst);
  bwd_weights_diff_weights_.Init(blob_weights_md_, weights_pd.diff_weights_desc(),
                                 kScratchDiffWeights);
  if (bias_term_) {
    bias_diff_scratch_.ReshapeLike(*blobs_[1]);
    diff_bias_ = memory(bias_md, engine, DNNL_MEMORY_NONE);
  }
  backward_built_ = true;
}

void DnnlDeconvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    DeconvolutionLayer::Forward_cpu(bottom, top);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  // Weights may have changed since the last pass (solver update): reorder every time.
  const memory weights = fwd_weights_.Read(blobs_[0]->cpu_data());
  if (bias_term_) bias_.set_data_handle(const_cast<float*>(blobs_[1]->cpu_data()));
  for (size_t i = 0; i < bottom.size(); ++i) {
    float* y = top[i]->mutable_cpu_data();
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, fwd_src_.Read(bottom[i]->cpu_data())},
                                         {DNNL_ARG_WEIGHTS, weights},
                                         {DNNL_ARG_DST, fwd_dst_.Write(y)}};
    if (bias_term_) args[DNNL_ARG_BIAS] = bias_;
    fwd_.execute(stream, args);
    fwd_dst_.Commit(y);
  }
  stream.wait();
}

void DnnlDeconvolutionLayer::Backward_cpu(const vector<Blob*>& top,
                                          const vector<bool>& propagate_down,
                                          const vector<Blob*>& bottom) {
  if (!supported_) {
    DeconvolutionLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (!backward_built_) BuildBackward();
  dnnl::stream& stream = ThreadDnnlContext().stream;
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  bool any_data_grad = false;
  for (size_t i = 0; i < bottom.size(); ++i) any_data_grad |= propagate_down[i];
  const memory weights = any_data_grad ? bwd_data_weights_.Read(blobs_[0]->cpu_data()) : memory();
  for (size_t i = 0; i < top.size(); ++i) {
    const float* dy = top[i]->cpu_diff();
    // Stays in its scratch slot until the data primitive reads it (see the header).
    memory weights_diff_dst;
    if (weight_grad || bias_grad) {
      float* dw = DnnlScratch(kScratchWeightGradient, blobs_[0]->count());
      weights_diff_dst = bwd_weights_diff_dst_.Read(dy);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, bwd_weights_src_.Read(bottom[i]->cpu_data())},
          {DNNL_ARG_DIFF_DST, weights_diff_dst},
          {DNNL_ARG_DIFF_WEIGHTS, bwd_weights_diff_weights_.Write(dw)}};
      if (bias_term_) {
        diff_bias_.set_data_handle(bias_diff_scratch_.mutable_cpu_data());
        args[DNNL_ARG_DIFF_BIAS] = diff_bias_;
      }
      bwd_weights_.execute(stream, args);
      bwd_weights_diff_weights_.Commit(dw);
      stream.wait();
      if (weight_grad) {
        math::axpy(blobs_[0]->count(), 1.f, dw, blobs_[0]->mutable_cpu_diff());
      }
      if (bias_grad) {
        math::axpy(blobs_[1]->count(), 1.f, bias_diff_scratch_.cpu_data(),
                   blobs_[1]->mutable_cpu_diff());
      }
    }
    if (propagate_down[i]) {
      float* dx = bottom[i]->mutable_cpu_diff();
      const memory diff_dst = weights_diff_dst && bwd_data_reuses_diff_dst_
                                  ? weights_diff_dst
                                  : bwd_data_diff_dst_.Read(dy);
      bwd_data_.execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst},
                                 {DNNL_ARG_WEIGHTS, weights},
                                 {DNNL_ARG_DIFF_SRC, bwd_data_diff_src_.Write(dx)}});
      bwd_data_diff_src_.Commit(dx);
    }
  }
  stream.wait();
}

}  // namespace caffe

#endif  // USE_DNNL
