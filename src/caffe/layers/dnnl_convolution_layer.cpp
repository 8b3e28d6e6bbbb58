#ifdef USE_DNNL

#include "caffe/layers/dnnl_convolution_layer.hpp"

#include "caffe/util/dnnl_context.hpp"

namespace caffe {

bool DnnlConvolutionLayer::Supported(const vector<Blob*>& bottom) const {
  return num_spatial_axes_ == 2 && channel_axis_ == 1 && bottom[0]->num_axes() == 4 &&
         bottom[0]->count() > 0;
}

void DnnlConvolutionLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ConvolutionLayer::Reshape(bottom, top);
  const int threads = DnnlThreads();
  if (bottom[0]->shape() == built_shape_ && threads == built_threads_) return;
  built_shape_ = bottom[0]->shape();
  built_threads_ = threads;
  supported_ = Supported(bottom);
  if (!supported_) {
    LOG(INFO) << "layer '" << name() << "' (Convolution, DNNL): bottom shape "
              << ShapeToString(bottom[0]->shape()) << " runs the reference engine";
    return;
  }
  // Caffe's weights, out x in/group x kh x kw, are oneDNN's oihw (grouped: goihw).
  const DnnlConvShape shape = MakeDnnlConvShape(
      bottom[0]->shape(), channels_, num_output_, group_, kernel_shape_, output_shape_, stride_,
      dilation_, pad_, bias_term_, dnnl::memory::format_tag::oihw,
      dnnl::memory::format_tag::goihw);
  try {
    primitives_.Build(shape);
  } catch (const dnnl::error& e) {
    LOG(WARNING) << "layer '" << name() << "' (Convolution, DNNL): oneDNN refused the "
                 << "geometry (" << e.what() << "); running the reference engine";
    supported_ = false;
  }
}

void DnnlConvolutionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (!supported_) {
    ConvolutionLayer::Forward_cpu(bottom, top);
    return;
  }
  primitives_.Forward(bottom, top, *blobs_[0], bias_term_ ? blobs_[1].get() : nullptr);
}

void DnnlConvolutionLayer::Backward_cpu(const vector<Blob*>& top,
                                        const vector<bool>& propagate_down,
                                        const vector<Blob*>& bottom) {
  if (!supported_) {
    ConvolutionLayer::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  Blob* bias = bias_term_ ? blobs_[1].get() : nullptr;
  primitives_.Backward(top, propagate_down, bottom, blobs_[0].get(), param_propagate_down(0),
                       bias, bias_term_ && param_propagate_down(1));
}

}  // namespace caffe

#endif  // USE_DNNL
