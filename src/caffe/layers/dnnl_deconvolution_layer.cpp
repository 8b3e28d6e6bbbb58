#ifdef USE_DNNL

#include "caffe/layers/dnnl_deconvolution_layer.hpp"

#include "caffe/util/dnnl_context.hpp"

namespace caffe {

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
  supported_ = Supported(bottom);
  if (!supported_) {
    LOG(INFO) << "layer '" << name() << "' (Deconvolution, DNNL): bottom shape "
              << ShapeToString(bottom[0]->shape()) << " runs the reference engine";
    return;
  }
  // oneDNN's deconvolution: src is the bottom (channels_), dst the top (num_output_),
  // and Caffe's weights, in x out/group x kh x kw, are its iohw (grouped: giohw).
  const DnnlConvShape shape = MakeDnnlConvShape(
      bottom[0]->shape(), channels_, num_output_, group_, kernel_shape_, output_shape_, stride_,
      dilation_, pad_, bias_term_, dnnl::memory::format_tag::iohw,
      dnnl::memory::format_tag::giohw);
  try {
    primitives_.Build(shape);
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << name() << "' (Deconvolution, DNNL): oneDNN refused the "
                 << "geometry (" << e.what() << "); running the reference engine";
    supported_ = false;
  }
}

void DnnlDeconvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    DeconvolutionLayer::Forward_cpu(bottom, top);
    return;
  }
  primitives_.Forward(bottom, top, *blobs_[0], bias_term_ ? blobs_[1].get() : nullptr);
}

void DnnlDeconvolutionLayer::Backward_cpu(const vector<Blob*>& top,
                                          const vector<bool>& propagate_down,
                                          const vector<Blob*>& bottom) {
  if (!supported_) {
    DeconvolutionLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  Blob* bias = bias_term_ ? blobs_[1].get() : nullptr;
  primitives_.Backward(top, propagate_down, bottom, blobs_[0].get(), param_propagate_down(0),
                       bias, bias_term_ && param_propagate_down(1));
}

}  // namespace caffe

#endif  // USE_DNNL
