#ifdef USE_DNNL

#include "caffe/layers/dnnl_pooling_layer.hpp"

#include <algorithm>

#include "caffe/util/math_functions.hpp"

namespace caffe {

using dnnl::memory;

bool DnnlPoolingLayer::ComputeGeometry(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const PoolingParameter& p = layer_param_.pooling_param();
  max_ = p.pool() == PoolingParameter::MAX;
  // The argmax top is Caffe's own index format; oneDNN keeps its own workspace.
  if (!(max_ || p.pool() == PoolingParameter::AVE) || top.size() != 1) return false;
  if (bottom[0]->count() == 0) return false;
  const int64_t height = bottom[0]->shape(2), width = bottom[0]->shape(3);
  int64_t kernel_h, kernel_w;
  if (p.global_pooling()) {
    kernel_h = height;
    kernel_w = width;
  } else {
    kernel_h = p.has_kernel_size() ? p.kernel_size() : p.kernel_h();
    kernel_w = p.has_kernel_size() ? p.kernel_size() : p.kernel_w();
  }
  const bool pad_hw = p.has_pad_h() || p.has_pad_w();
  const int64_t pad_h = pad_hw ? p.pad_h() : p.pad(), pad_w = pad_hw ? p.pad_w() : p.pad();
  const bool stride_hw = p.has_stride_h() || p.has_stride_w();
  const int64_t stride_h = stride_hw ? p.stride_h() : p.stride();
  const int64_t stride_w = stride_hw ? p.stride_w() : p.stride();
  const int64_t out_h = pooled_height(), out_w = pooled_width();

  // Padding after the last row/column so that oneDNN's floor rule yields Caffe's
  // size: the last window ends at (out - 1) * stride + kernel - pad. When Caffe's
  // rounding leaves input unused that value is negative and 0 does the same.
  auto trailing_pad = [](int64_t in, int64_t out, int64_t kernel, int64_t stride,
                         int64_t pad) {
    return std::max<int64_t>(0, (out - 1) * stride + kernel - in - pad);
  };
  const int64_t pad_b = trailing_pad(height, out_h, kernel_h, stride_h, pad_h);
  const int64_t pad_r = trailing_pad(width, out_w, kernel_w, stride_w, pad_w);
  // A window entirely in the padding (Caffe outputs 0 there) has no oneDNN meaning.
  if (pad_b >= kernel_h || pad_r >= kernel_w) return false;
  if ((height + pad_h + pad_b - kernel_h) / stride_h + 1 != out_h ||
      (width + pad_w + pad_r - kernel_w) / stride_w + 1 != out_w) {
    return false;
  }

  src_dims_ = {bottom[0]->shape(0), bottom[0]->shape(1), height, width};
  dst_dims_ = {bottom[0]->shape(0), bottom[0]->shape(1), out_h, out_w};
  kernel_ = {kernel_h, kernel_w};
  strides_ = {stride_h, stride_w};
  padding_l_ = {pad_h, pad_w};
  padding_r_ = {pad_b, pad_r};

  // Caffe clips an average window to the symmetrically padded image; oneDNN divides
  // by the whole kernel. They differ only for windows that reach past that border.
  average_scale_.clear();
  if (!max_ && (pad_b > pad_h || pad_r > pad_w)) {
    ResizeScratch(&average_scale_, out_h * out_w, "the border-window divisors");
    for (int64_t ph = 0; ph < out_h; ++ph) {
      const int64_t h0 = ph * stride_h - pad_h;
      const int64_t rows = std::min(h0 + kernel_h, height + pad_h) - h0;
      for (int64_t pw = 0; pw < out_w; ++pw) {
        const int64_t w0 = pw * stride_w - pad_w;
        const int64_t cols = std::min(w0 + kernel_w, width + pad_w) - w0;
        average_scale_[ph * out_w + pw] =
            static_cast<float>(kernel_h * kernel_w) / static_cast<float>(rows * cols);
      }
    }
  }
  return true;
}

void DnnlPoolingLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  PoolingLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_ &&
      top.size() == built_tops_) {
    return;
  }
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  built_tops_ = top.size();
  supported_ = ComputeGeometry(bottom, top);
  if (!supported_) {
    LOG(INFO) << "layer '" << name() << "' (Pooling, DNNL): this configuration runs the "
              << "reference engine";
    return;
  }
  implementation_.clear();
  try {
    Build();
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << name() << "' (Pooling, DNNL): oneDNN refused the geometry ("
                 << e.what() << "); running the reference engine";
    supported_ = false;
    return;
  }
  implementation_ = fwd_pd_.impl_info_str();
  if (engine_by_default() && IsOneDnnReferenceKernel(implementation_)) {
    LOG(INFO) << "layer '" << name() << "' (Pooling): oneDNN has only its reference kernel ("
              << implementation_ << ") for this layout on this CPU; running the reference "
              << "engine (engine: DNNL keeps oneDNN)";
    supported_ = false;
    workspace_ = memory();  // the reference code keeps its own index
  }
}

bool DnnlPoolingLayer::engine_by_default() const {
  return layer_param_.pooling_param().engine() == PoolingParameter::DEFAULT &&
         context().default_engine() == DefaultEngine::MEASURED;
}

void DnnlPoolingLayer::Build() {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  const dnnl::algorithm algorithm = max_ ? dnnl::algorithm::pooling_max
                                         : dnnl::algorithm::pooling_avg_include_padding;
  const memory::desc src_md = PlainDesc(src_dims_), dst_md = PlainDesc(dst_dims_);
  // Always the training variant: a TEST-phase net may still be asked for gradients,
  // and MAX backward needs the workspace only training forward keeps.
  dnnl::pooling_forward::desc fwd_desc(dnnl::prop_kind::forward_training, algorithm, src_md,
                                       dst_md, strides_, kernel_, padding_l_, padding_r_);
  fwd_pd_ = dnnl::pooling_forward::primitive_desc(fwd_desc, engine);
  fwd_ = dnnl::pooling_forward(fwd_pd_);
  dnnl::pooling_backward::desc bwd_desc(algorithm, src_md, dst_md, strides_, kernel_,
                                        padding_l_, padding_r_);
  bwd_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(bwd_desc, engine, fwd_pd_));
  src_ = memory(src_md, engine, DNNL_MEMORY_NONE);
  dst_ = memory(dst_md, engine, DNNL_MEMORY_NONE);
  diff_src_ = memory(src_md, engine, DNNL_MEMORY_NONE);
  diff_dst_ = memory(dst_md, engine, DNNL_MEMORY_NONE);
  workspace_ = max_ ? memory(fwd_pd_.workspace_desc(), engine) : memory();
  if (!average_scale_.empty()) {
    scaled_diff_.Reshape({dst_dims_[0], dst_dims_[1], dst_dims_[2], dst_dims_[3]});
  }
}

void DnnlPoolingLayer::ApplyAverageScale(const float* in, float* out, int64_t planes) const {
  const int64_t plane = static_cast<int64_t>(average_scale_.size());
  for (int64_t c = 0; c < planes; ++c) {
    math::mul(plane, in + c * plane, average_scale_.data(), out + c * plane);
  }
}

void DnnlPoolingLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    PoolingLayer::Forward_cpu(bottom, top);
    return;
  }
  dnnl::stream& stream = ThreadDnnlContext().stream;
  src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
  float* y = top[0]->mutable_cpu_data();
  dst_.set_data_handle(y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
  if (max_) args[DNNL_ARG_WORKSPACE] = workspace_;
  fwd_.execute(stream, args);
  stream.wait();
  if (!average_scale_.empty()) ApplyAverageScale(y, y, dst_dims_[0] * dst_dims_[1]);
}

void DnnlPoolingLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                    const vector<Blob*>& bottom) {
  if (!supported_) {
    PoolingLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  dnnl::stream& stream = ThreadDnnlContext().stream;
  const float* dy = top[0]->cpu_diff();
  if (!average_scale_.empty()) {
    ApplyAverageScale(dy, scaled_diff_.mutable_cpu_data(), dst_dims_[0] * dst_dims_[1]);
    dy = scaled_diff_.cpu_data();
  }
  diff_dst_.set_data_handle(const_cast<float*>(dy));
  diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, diff_dst_},
                                       {DNNL_ARG_DIFF_SRC, diff_src_}};
  if (max_) args[DNNL_ARG_WORKSPACE] = workspace_;
  bwd_.execute(stream, args);
  stream.wait();
}

}  // namespace caffe

#endif  // USE_DNNL
