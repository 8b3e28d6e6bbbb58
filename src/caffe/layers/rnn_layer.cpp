#include "caffe/layers/rnn_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void RNNLayer::AddUnrolledLayers(NetParameter* net) const {
  const int64_t dim = num_output_;
  // W_xh x_t + b_h for all timesteps in one product over the T x N items.
  AddInnerProduct(net, "x_transform", "x", "W_xh_x", dim, 2, "W_xh", "b_h");
  if (has_static_input_) {
    AddInnerProduct(net, "x_static_transform", "x_static", "W_xh_x_static_flat", dim, 1,
                    "W_xh_static", "");
    AddStaticInputReshape(net, "W_xh_x_static_flat", "W_xh_x_static");
  }
  AddTimestepSlices(net, "W_xh_x");
  AddTimestepSlices(net, "cont");
  vector<string> outputs;
  for (int64_t t = 1; t <= timesteps_; ++t) {
    const string conted = AtTime("h_conted", t - 1);
    // cont_t h_{t-1}: zero where a sequence starts, so nothing before it leaks in.
    AddLayer(net, "Scale", conted, {AtTime("h", t - 1), AtTime("cont", t)}, {conted})
        ->mutable_scale_param()
        ->set_axis(0);
    const string recurrent = AtTime("W_hh_h", t - 1);
    AddInnerProduct(net, AtTime("hidden_transform", t), conted, recurrent, dim, 2, "W_hh", "");
    vector<string> terms{recurrent, AtTime("W_xh_x", t)};
    if (has_static_input_) terms.push_back("W_xh_x_static");
    const string preactivation = AtTime("h_neuron_input", t);
    AddLayer(net, "Eltwise", preactivation, terms, {preactivation});  // SUM by default
    AddLayer(net, "TanH", AtTime("h", t), {preactivation}, {AtTime("h", t)});
    const string output_input = AtTime("W_ho_h", t);
    AddInnerProduct(net, AtTime("output_transform", t), AtTime("h", t), output_input, dim, 2,
                    "W_ho", "b_o");
    AddLayer(net, "TanH", AtTime("o", t), {output_input}, {AtTime("o", t)});
    outputs.push_back(AtTime("o", t));
  }
  AddLayer(net, "Concat", "o_concat", outputs, {"o"})->mutable_concat_param()->set_axis(0);
}

REGISTER_LAYER_CLASS(RNN);

}  // namespace caffe
