#ifdef USE_DNNL

#include "caffe/layers/dnnl_relu_layer.hpp"

namespace caffe {

using dnnl::memory;

void DnnlReLULayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ReLULayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  const int64_t count = bottom[0]->count();
  if (count == built_count_ && threads == built_threads_) return;
  built_count_ = count;
  built_threads_ = threads;
  if (count == 0) return;
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  const memory::desc md = PlainDesc({count});
  const float slope = layer_param_.relu_param().negative_slope();
  dnnl::eltwise_forward::desc fwd_desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::eltwise_relu, md, slope);
  dnnl::eltwise_forward::primitive_desc fwd_pd(fwd_desc, engine);
  fwd_ = dnnl::eltwise_forward(fwd_pd);
  // Backward reads the bottom: in place that is y, whose sign is x's for slope >= 0,
  // the same mask the reference layer uses.
  dnnl::eltwise_backward::desc bwd_desc(dnnl::algorithm::eltwise_relu, md, md, slope);
  bwd_ = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(bwd_desc, engine, fwd_pd));
  src_ = memory(md, engine, DNNL_MEMORY_NONE);
  dst_ = memory(md, engine, DNNL_MEMORY_NONE);
  diff_dst_ = memory(md, engine, DNNL_MEMORY_NONE);
  diff_src_ = memory(md, engine, DNNL_MEMORY_NONE);
}

void DnnlReLULayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (built_count_ == 0) return;
  dnnl::stream& stream = ThreadDnnlContext().stream;
  src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
  dst_.set_data_handle(top[0]->mutable_cpu_data());
  fwd_.execute(stream, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
  stream.wait();
}

void DnnlReLULayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                 const vector<Blob*>& bottom) {
  if (!propagate_down[0] || built_count_ == 0) return;
  dnnl::stream& stream = ThreadDnnlContext().stream;
  src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
  diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
  diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
  bwd_.execute(stream,
               {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DIFF_DST, diff_dst_}, {DNNL_ARG_DIFF_SRC, diff_src_}});
  stream.wait();
}

}  // namespace caffe

#endif  // USE_DNNL
