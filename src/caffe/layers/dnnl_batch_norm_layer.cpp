#ifdef USE_DNNL

#include "caffe/layers/dnnl_batch_norm_layer.hpp"

#include <cmath>

#include "caffe/util/math_functions.hpp"

namespace caffe {

using dnnl::memory;

void DnnlBatchNormLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  BatchNormLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_ &&
      use_global_stats_ == built_global_) {
    return;
  }
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  built_global_ = use_global_stats_;
  // With global statistics the layer is one multiply-add per element, which the
  // reference loop does in one pass; oneDNN would add two reorders around it.
  supported_ = !use_global_stats_ && bottom[0]->num_axes() >= 2 && bottom[0]->count() > 0;
  if (!supported_) return;
  // Every axis after the channels is "spatial" to Caffe; fold them into one.
  const memory::dims dims{num_, channels_, spatial_, 1};
  try {
    Build(ChannelBlockedDesc(dims));
  } catch (const dnnl::error&) {
    try {
      Build(PlainDesc(dims));
    } catch (const dnnl::error& e) {
      LOG(WARNING) << "layer '" << name() << "' (BatchNorm, DNNL): oneDNN refused the shape ("
                   << e.what() << "); running the reference engine";
      supported_ = false;
    }
  }
}

void DnnlBatchNormLayer::Build(const memory::desc& layout) {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  const memory::desc plain = PlainDesc({num_, channels_, spatial_, 1});
  const memory::desc channel_md = PlainDesc({channels_});
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_training, layout, eps_,
                                               dnnl::normalization_flags::none);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, engine);
  // Backward sees x_hat, whose statistics are exactly mean 0 and variance 1, so
  // epsilon is 0 there; Caffe's 1/sqrt(var + eps) comes in as the scale.
  const auto flags = dnnl::normalization_flags::use_scale;
  dnnl::batch_normalization_forward::desc hint_desc(dnnl::prop_kind::forward_training, layout,
                                                    0.f, flags);
  dnnl::batch_normalization_forward::primitive_desc hint(hint_desc, engine);
  // backward, not backward_data: oneDNN offers the scale only with the full
  // backward, whose scale gradient lands in a scratch buffer nobody reads.
  dnnl::batch_normalization_backward::desc bwd_desc(dnnl::prop_kind::backward, layout, layout,
                                                    0.f, flags);
  dnnl::batch_normalization_backward::primitive_desc bwd_pd(bwd_desc, engine, hint);
  fwd_ = dnnl::batch_normalization_forward(pd);
  bwd_ = dnnl::batch_normalization_backward(bwd_pd);
  src_.Init(plain, pd.src_desc(), kScratchSrc);
  dst_.Init(plain, pd.dst_desc(), kScratchDst);
  x_hat_.Init(plain, bwd_pd.src_desc(), kScratchSrc);
  diff_dst_.Init(plain, bwd_pd.diff_dst_desc(), kScratchDst);
  diff_src_.Init(plain, bwd_pd.diff_src_desc(), kScratchDiffSrc);
  zeros_.Reshape({channels_});
  ones_.Reshape({channels_});
  math::set(channels_, 0.f, zeros_.mutable_cpu_data());
  math::set(channels_, 1.f, ones_.mutable_cpu_data());
  zero_mean_ = memory(channel_md, engine, DNNL_MEMORY_NONE);
  unit_variance_ = memory(channel_md, engine, DNNL_MEMORY_NONE);
  scale_ = memory(channel_md, engine, DNNL_MEMORY_NONE);
  diff_scale_ = memory(channel_md, engine);
  mean_mem_ = memory(channel_md, engine, DNNL_MEMORY_NONE);
  variance_mem_ = memory(channel_md, engine, DNNL_MEMORY_NONE);
}

void DnnlBatchNormLayer::ComputeInverseStd() {
  const float* variance = variance_.cpu_data();
  float* inv_std = inv_std_.mutable_cpu_data();
  for (int64_t c = 0; c < channels_; ++c) inv_std[c] = 1.f / std::sqrt(variance[c] + eps_);
}

void DnnlBatchNormLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    BatchNormLayer::Forward_cpu(bottom, top);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  // oneDNN writes the batch mean and (biased) variance here.
  mean_mem_.set_data_handle(mean_.mutable_cpu_data());
  variance_mem_.set_data_handle(variance_.mutable_cpu_data());
  float* y = top[0]->mutable_cpu_data();  // may alias the bottom
  fwd_.execute(stream, {{DNNL_ARG_SRC, src_.Read(bottom[0]->cpu_data())},
                        {DNNL_ARG_DST, dst_.Write(y)},
                        {DNNL_ARG_MEAN, mean_mem_},
                        {DNNL_ARG_VARIANCE, variance_mem_}});
  dst_.Commit(y);
  stream.wait();
  ComputeInverseStd();
  // Layers running in place after this one overwrite the top: keep x_hat.
  math::copy(top[0]->count(), y, x_norm_.mutable_cpu_data());
  x_norm_kept_ = true;
  x_norm_kept_on_device_ = false;
  UpdateRunningStatistics();
}

void DnnlBatchNormLayer::Backward_cpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  if (!supported_) {
    BatchNormLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  dnnl::stream& stream = ThreadDnnlContext().stream;
  const memory x_hat = x_hat_.Read(x_norm_.cpu_data());
  zero_mean_.set_data_handle(const_cast<float*>(zeros_.cpu_data()));
  unit_variance_.set_data_handle(const_cast<float*>(ones_.cpu_data()));
  scale_.set_data_handle(const_cast<float*>(inv_std_.cpu_data()));
  float* dx = bottom[0]->mutable_cpu_diff();  // may alias the top diff
  bwd_.execute(stream, {{DNNL_ARG_SRC, x_hat},
                        {DNNL_ARG_MEAN, zero_mean_},
                        {DNNL_ARG_VARIANCE, unit_variance_},
                        {DNNL_ARG_SCALE, scale_},
                        {DNNL_ARG_DIFF_SCALE, diff_scale_},
                        {DNNL_ARG_DIFF_DST, diff_dst_.Read(top[0]->cpu_diff())},
                        {DNNL_ARG_DIFF_SRC, diff_src_.Write(dx)}});
  diff_src_.Commit(dx);
  stream.wait();
}

}  // namespace caffe

#endif  // USE_DNNL
