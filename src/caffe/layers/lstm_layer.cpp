#include "caffe/layers/lstm_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void LSTMLayer::AddUnrolledLayers(NetParameter* net) const {
  const int64_t gates = 4 * num_output_;
  // W_xc x_t + b_c for all timesteps in one product over the T x N items.
  AddInnerProduct(net, "x_transform", "x", "W_xc_x", gates, 2, "W_xc", "b_c");
  if (has_static_input_) {
    AddInnerProduct(net, "x_static_transform", "x_static", "W_xc_x_static_flat", gates, 1,
                    "W_xc_static", "");
    AddStaticInputReshape(net, "W_xc_x_static_flat", "W_xc_x_static");
  }
  AddTimestepSlices(net, "W_xc_x");
  AddTimestepSlices(net, "cont");
  vector<string> outputs;
  for (int64_t t = 1; t <= timesteps_; ++t) {
    const string conted = AtTime("h_conted", t - 1);
    // cont_t h_{t-1}: zero where a sequence starts (LSTMUnit does the same for c).
    AddLayer(net, "Scale", conted, {AtTime("h", t - 1), AtTime("cont", t)}, {conted})
        ->mutable_scale_param()
        ->set_axis(0);
    const string recurrent = AtTime("W_hc_h", t - 1);
    AddInnerProduct(net, AtTime("transform", t), conted, recurrent, gates, 2, "W_hc", "");
    vector<string> terms{recurrent, AtTime("W_xc_x", t)};
    if (has_static_input_) terms.push_back("W_xc_x_static");
    const string gate_input = AtTime("gate_input", t);
    AddLayer(net, "Eltwise", gate_input, terms, {gate_input});  // SUM by default
    AddLayer(net, "LSTMUnit", AtTime("unit", t),
             {AtTime("c", t - 1), gate_input, AtTime("cont", t)},
             {AtTime("c", t), AtTime("h", t)});
    outputs.push_back(AtTime("h", t));
  }
  AddLayer(net, "Concat", "h_concat", outputs, {"h"})->mutable_concat_param()->set_axis(0);
}

REGISTER_LAYER_CLASS(LSTM);

}  // namespace caffe
