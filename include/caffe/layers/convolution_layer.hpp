// Convolution (type "Convolution"): each bottom is convolved with the shared weights
// (num_output x channels/group x kernel...) into its own top, by im2col and one GEMM
// per group per image. Output size per spatial axis, as in Caffe:
//   out = (in + 2 pad - (dilation (kernel - 1) + 1)) / stride + 1   (floor).
#ifndef CAFFE_LAYERS_CONVOLUTION_LAYER_HPP_
#define CAFFE_LAYERS_CONVOLUTION_LAYER_HPP_

#include "caffe/layers/base_conv_layer.hpp"

namespace caffe {

class ConvolutionLayer : public BaseConvolutionLayer {
 public:
  explicit ConvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer(param) {}
  const char* type() const override { return "Convolution"; }

 protected:
  bool reverse_dimensions() const override { return false; }
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

#endif  // CAFFE_LAYERS_CONVOLUTION_LAYER_HPP_
