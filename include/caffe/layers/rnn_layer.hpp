// RNN: BVLC's `RNN`, a plain (Elman) recurrent layer on RecurrentLayer's bottoms and
// tops (recurrent_param num_output D, weight_filler, bias_filler, expose_hidden). At
// timestep t, for each stream:
//   h_t = tanh(W_hh (cont_t h_{t-1}) + W_xh x_t + b_h [+ W_xh_static x_static])
//   o_t = tanh(W_ho h_t + b_o)
// top 0 is o (T x N x D); the state is h. Weights, in this order (BVLC's): W_xh
// (D x the inputs per timestep), b_h (D), W_xh_static (D x the static inputs; only with
// x_static), W_hh (D x D), W_ho (D x D), b_o (D).
#ifndef CAFFE_LAYERS_RNN_LAYER_HPP_
#define CAFFE_LAYERS_RNN_LAYER_HPP_

#include "caffe/layers/recurrent_layer.hpp"

namespace caffe {

class RNNLayer : public RecurrentLayer {
 public:
  explicit RNNLayer(const LayerParameter& param) : RecurrentLayer(param) {}
  const char* type() const override { return "RNN"; }

 protected:
  vector<string> StateNames() const override { return {"h"}; }
  string OutputName() const override { return "o"; }
  void AddUnrolledLayers(NetParameter* net) const override;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_RNN_LAYER_HPP_
