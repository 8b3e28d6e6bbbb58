#ifdef USE_DNNL

#include "caffe/layers/dnnl_inner_product_layer.hpp"

#include "caffe/util/math_functions.hpp"

namespace caffe {

using dnnl::memory;

void DnnlInnerProductLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  InnerProductLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (M_ == built_rows_ && threads == built_threads_) return;
  built_rows_ = M_;
  built_threads_ = threads;
  supported_ = M_ > 0;
  if (!supported_) return;
  try {
    Build();
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << name() << "' (InnerProduct, DNNL): oneDNN refused the shape ("
                 << e.what() << "); running the reference engine";
    supported_ = false;
  }
}

void DnnlInnerProductLayer::Build() {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  const memory::desc src_md = PlainDesc({M_, K_});
  // oneDNN's weights are always O x I; Caffe's transposed K x N blob is its "ba".
  const memory::desc weights_md =
      transpose_ ? memory::desc({N_, K_}, memory::data_type::f32, memory::format_tag::ba)
                 : PlainDesc({N_, K_});
  const memory::desc bias_md = bias_term_ ? PlainDesc({N_}) : memory::desc();
  const memory::desc dst_md = PlainDesc({M_, N_});
  dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_training, src_md, weights_md,
                                         bias_md, dst_md);
  fwd_pd_ = dnnl::inner_product_forward::primitive_desc(desc, engine);
  fwd_ = dnnl::inner_product_forward(fwd_pd_);
  src_ = memory(src_md, engine, DNNL_MEMORY_NONE);
  weights_ = memory(weights_md, engine, DNNL_MEMORY_NONE);
  bias_ = bias_term_ ? memory(bias_md, engine, DNNL_MEMORY_NONE) : memory();
  dst_ = memory(dst_md, engine, DNNL_MEMORY_NONE);

  dnnl::inner_product_backward_data::desc data_desc(src_md, weights_md, dst_md);
  bwd_data_ = dnnl::inner_product_backward_data(
      dnnl::inner_product_backward_data::primitive_desc(data_desc, engine, fwd_pd_));
  dnnl::inner_product_backward_weights::desc weights_desc(src_md, weights_md, bias_md, dst_md);
  bwd_weights_ = dnnl::inner_product_backward_weights(
      dnnl::inner_product_backward_weights::primitive_desc(weights_desc, engine, fwd_pd_));
  diff_src_ = memory(src_md, engine, DNNL_MEMORY_NONE);
  diff_weights_ = memory(weights_md, engine, DNNL_MEMORY_NONE);
  diff_bias_ = bias_term_ ? memory(bias_md, engine, DNNL_MEMORY_NONE) : memory();
  diff_dst_ = memory(dst_md, engine, DNNL_MEMORY_NONE);
  weight_diff_scratch_.ReshapeLike(*blobs_[0]);
  if (bias_term_) bias_diff_scratch_.ReshapeLike(*blobs_[1]);
}

void DnnlInnerProductLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    InnerProductLayer::Forward_cpu(bottom, top);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
  weights_.set_data_handle(const_cast<float*>(blobs_[0]->cpu_data()));
  dst_.set_data_handle(top[0]->mutable_cpu_data());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};
  if (bias_term_) {
    bias_.set_data_handle(const_cast<float*>(blobs_[1]->cpu_data()));
    args[DNNL_ARG_BIAS] = bias_;
  }
  fwd_.execute(stream, args);
  stream.wait();
}

void DnnlInnerProductLayer::Backward_cpu(const vector<Blob*>& top,
                                         const vector<bool>& propagate_down,
                                         const vector<Blob*>& bottom) {
  if (!supported_) {
    InnerProductLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
  const bool weight_grad = param_propagate_down(0);
  const bool bias_grad = bias_term_ && param_propagate_down(1);
  if (weight_grad || bias_grad) {
    src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
    diff_weights_.set_data_handle(weight_diff_scratch_.mutable_cpu_data());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_},
                                         {DNNL_ARG_DIFF_DST, diff_dst_},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights_}};
    if (bias_term_) {
      diff_bias_.set_data_handle(bias_diff_scratch_.mutable_cpu_data());
      args[DNNL_ARG_DIFF_BIAS] = diff_bias_;
    }
    bwd_weights_.execute(stream, args);
    stream.wait();
    if (weight_grad) {
      math::axpy(blobs_[0]->count(), 1.f, weight_diff_scratch_.cpu_data(),
                 blobs_[0]->mutable_cpu_diff());
    }
    if (bias_grad) {
      math::axpy(blobs_[1]->count(), 1.f, bias_diff_scratch_.cpu_data(),
                 blobs_[1]->mutable_cpu_diff());
    }
  }
  if (propagate_down[0]) {
    weights_.set_data_handle(const_cast<float*>(blobs_[0]->cpu_data()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    bwd_data_.execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst_},
                               {DNNL_ARG_WEIGHTS, weights_},
                               {DNNL_ARG_DIFF_SRC, diff_src_}});
    stream.wait();
  }
}

}  // namespace caffe

#endif  // USE_DNNL
