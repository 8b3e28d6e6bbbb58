#ifdef USE_DNNL

#include "caffe/layers/dnnl_conv_layer.hpp"

#include "caffe/util/dnnl_context.hpp"

namespace caffe {

template <class Base, class Ops>
void DnnlConvLayer<Base, Ops>::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  Base::Reshape(bottom, top);
  const int threads = DnnlThreads();
  const int src_block = bottom[0]->channel_block(), dst_block = top[0]->channel_block();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_ &&
      src_block == built_src_block_ && dst_block == built_dst_block_) {
    return;
  }
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  built_src_block_ = src_block;
  built_dst_block_ = dst_block;
  supported_ = this->num_spatial_axes_ == 2 && this->channel_axis_ == 1 &&
               bottom[0]->num_axes() == 4 && bottom[0]->count() > 0;
  if (!supported_) {
    LOG(INFO) << "layer '" << this->name() << "' (" << this->type()
              << ", DNNL): bottom shape " << ShapeToString(bottom[0]->shape())
              << " runs the reference engine";
    return;
  }
  // src is the bottom (channels_) and dst the top (num_output_) for both families.
  DnnlConvShape shape = MakeDnnlConvShape(
      bottom[0]->shape(), this->channels_, this->num_output_, this->group_,
      this->kernel_shape_, this->output_shape_, this->stride_, this->dilation_, this->pad_,
      this->bias_term_, Ops::kBlobWeightsTag, Ops::kGroupedBlobWeightsTag);
  shape.src_block = src_block;
  shape.dst_block = dst_block;
  try {
    primitives_.Build(shape);
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << this->name() << "' (" << this->type()
                 << ", DNNL): oneDNN refused the geometry (" << e.what()
                 << "); running the reference engine";
    supported_ = false;
  }
}

template <class Base, class Ops>
void DnnlConvLayer<Base, Ops>::Forward_cpu(const vector<Blob*>& bottom,
                                           const vector<Blob*>& top) {
  if (!supported_) {
    Base::Forward_cpu(bottom, top);
    return;
  }
  primitives_.Forward(bottom, top, *this->blobs_[0],
                      this->bias_term_ ? this->blobs_[1].get() : nullptr);
}

template <class Base, class Ops>
void DnnlConvLayer<Base, Ops>::Backward_cpu(const vector<Blob*>& top,
                                            const vector<bool>& propagate_down,
                                            const vector<Blob*>& bottom) {
  if (!supported_) {
    Base::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  Blob* bias = this->bias_term_ ? this->blobs_[1].get() : nullptr;
  primitives_.Backward(top, propagate_down, bottom, this->blobs_[0].get(),
                       this->param_propagate_down(0), bias,
                       this->bias_term_ && this->param_propagate_down(1));
}

template class DnnlConvLayer<ConvolutionLayer, DnnlConvolutionOps>;
template class DnnlConvLayer<DeconvolutionLayer, DnnlDeconvolutionOps>;

}  // namespace caffe

#endif  // USE_DNNL
