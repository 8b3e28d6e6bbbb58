#include "caffe/layers/lstm_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void LSTMLayer::AddUnrolledLayers(NetParameter* net) const {
  const int64_t gates = 4 * num_output_;
  AddInputProducts(net, gates, "W_xc", "b_c", "W_xc_static");
  vector<string> outputs;
  for (int64_t t = 1; t <= timesteps_; ++t) {
    const string gate_input = AtTime("gate_input", t);
    AddTimestepSum(net, t, gates, "W_hc", "W_xc", "W_xc_static", gate_input);
    // LSTMUnit zeroes c_{t-1} where cont_t is 0, as the sum did h_{t-1}.
    AddLayer(net, "LSTMUnit", AtTime("unit", t),
             {AtTime("c", t - 1), gate_input, AtTime("cont", t)}, {AtTime("c", t), AtTime("h", t)});
    outputs.push_back(AtTime("h", t));
  }
  AddLayer(net, "Concat", "h_concat", outputs, {"h"})->mutable_concat_param()->set_axis(0);
}

REGISTER_LAYER_CLASS(LSTM);

}  // namespace caffe
