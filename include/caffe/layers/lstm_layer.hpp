// LSTM: BVLC's `LSTM`, a long short-term memory layer on RecurrentLayer's bottoms and
// tops (recurrent_param num_output D, weight_filler, bias_filler, expose_hidden). At
// timestep t, for each stream, the 4D gate inputs
//   W_xc x_t + b_c [+ W_xc_static x_static] + W_hc (cont_t h_{t-1})
// (input, forget, output gate and candidate, D each) drive an LSTMUnit (see
// lstm_unit_layer.hpp), which gives c_t from cont_t c_{t-1} and h_t = o tanh(c_t).
// top 0 is h (T x N x D); the states are h and c. Weights, in this order (BVLC's): W_xc
// (4D x the inputs per timestep), b_c (4D), W_xc_static (4D x the static inputs; only
// with x_static), W_hc (4D x D).
#ifndef CAFFE_LAYERS_LSTM_LAYER_HPP_
#define CAFFE_LAYERS_LSTM_LAYER_HPP_

#include "caffe/layers/recurrent_layer.hpp"

namespace caffe {

class LSTMLayer : public RecurrentLayer {
 public:
  explicit LSTMLayer(const LayerParameter& param) : RecurrentLayer(param) {}
  const char* type() const override { return "LSTM"; }

 protected:
  vector<string> StateNames() const override { return {"h", "c"}; }
  string OutputName() const override { return "h"; }
  void AddUnrolledLayers(NetParameter* net) const override;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_LSTM_LAYER_HPP_
