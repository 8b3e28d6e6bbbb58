#ifdef USE_DNNL

#include "caffe/layers/dnnl_lrn_layer.hpp"

namespace caffe {

using dnnl::memory;

void DnnlLRNLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LRNLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_) return;
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  supported_ = across_channels_ && bottom[0]->count() > 0;
  if (!supported_) return;
  const memory::dims dims{num_, channels_, height_, width_};
  try {
    Build(ChannelBlockedDesc(dims));
  } catch (const dnnl::error&) {
    try {
      Build(PlainDesc(dims));
    } catch (const dnnl::error& e) {
      LOG(WARNING) << "layer '" << name() << "' (LRN, DNNL): oneDNN refused the configuration ("
                   << e.what() << "); running the reference engine";
      supported_ = false;
    }
  }
}

void DnnlLRNLayer::Build(const memory::desc& layout) {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  // oneDNN's alpha is Caffe's: both divide it by the window size.
  dnnl::lrn_forward::desc fwd_desc(dnnl::prop_kind::forward_training,
                                   dnnl::algorithm::lrn_across_channels, layout, size_, alpha_,
                                   beta_, k_);
  dnnl::lrn_forward::primitive_desc fwd_pd(fwd_desc, engine);
  dnnl::lrn_backward::desc bwd_desc(dnnl::algorithm::lrn_across_channels, layout, layout, size_,
                                    alpha_, beta_, k_);
  dnnl::lrn_backward::primitive_desc bwd_pd(bwd_desc, engine, fwd_pd);
  fwd_ = dnnl::lrn_forward(fwd_pd);
  bwd_ = dnnl::lrn_backward(bwd_pd);
  const memory::desc plain = PlainDesc({num_, channels_, height_, width_});
  src_.Init(plain, fwd_pd.src_desc());
  dst_.Init(plain, fwd_pd.dst_desc());
  diff_dst_.Init(plain, bwd_pd.diff_dst_desc());
  diff_src_.Init(plain, bwd_pd.diff_src_desc());
  // Some implementations keep no workspace; then backward recomputes what it needs.
  const memory::desc workspace_md = fwd_pd.workspace_desc();
  workspace_ = workspace_md.get_size() > 0 ? memory(workspace_md, engine) : memory();
}

void DnnlLRNLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    LRNLayer::Forward_cpu(bottom, top);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  float* y = top[0]->mutable_cpu_data();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_.Read(bottom[0]->cpu_data())},
                                       {DNNL_ARG_DST, dst_.Write(y)}};
  if (workspace_) args[DNNL_ARG_WORKSPACE] = workspace_;
  fwd_.execute(stream, args);
  dst_.Commit(y);
  stream.wait();
}

void DnnlLRNLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!supported_) {
    LRNLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  dnnl::stream& stream = ThreadDnnlContext().stream;
  float* dx = bottom[0]->mutable_cpu_diff();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_.Read(bottom[0]->cpu_data())},
                                       {DNNL_ARG_DIFF_DST, diff_dst_.Read(top[0]->cpu_diff())},
                                       {DNNL_ARG_DIFF_SRC, diff_src_.Write(dx)}};
  if (workspace_) args[DNNL_ARG_WORKSPACE] = workspace_;
  bwd_.execute(stream, args);
  diff_src_.Commit(dx);
  stream.wait();
}

}  // namespace caffe

#endif  // USE_DNNL
