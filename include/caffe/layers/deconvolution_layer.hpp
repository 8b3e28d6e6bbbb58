// Deconvolution (type "Deconvolution"), the transpose of Convolution: its forward pass
// is a convolution's backward-data pass, so it upsamples. Weights are
// channels x num_output/group x kernel... Output size per spatial axis, as in Caffe:
//   out = (in - 1) stride + dilation (kernel - 1) + 1 - 2 pad.
#ifndef CAFFE_LAYERS_DECONVOLUTION_LAYER_HPP_
#define CAFFE_LAYERS_DECONVOLUTION_LAYER_HPP_

#include "caffe/layers/base_conv_layer.hpp"

namespace caffe {

class DeconvolutionLayer : public BaseConvolutionLayer {
 public:
  explicit DeconvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer(param) {}
  const char* type() const override { return "Deconvolution"; }

 protected:
  bool reverse_dimensions() const override { return true; }
  void ComputeOutputShape(const vector<int64_t>& input_spatial) override;
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  // Both modes' passes: the host ones, or for Mode::GPU the same code on device
  // memory (the GPU overrides call these where HasGpuPath(), else the host ones).
  void ForwardOn(Mode mode, const vector<Blob*>& bottom, const vector<Blob*>& top);
  void BackwardOn(Mode mode, const vector<Blob*>& top, const vector<bool>& propagate_down,
                  const vector<Blob*>& bottom);
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_DECONVOLUTION_LAYER_HPP_
