#include "caffe/layers/rnn_layer.hpp"

#include "caffe/layer_factory.hpp"

namespace caffe {

void RNNLayer::AddUnrolledLayers(NetParameter* net) const {
  const int64_t dim = num_output_;
  AddInputProducts(net, dim, "W_xh", "b_h", "W_xh_static");
  vector<string> outputs;
  for (int64_t t = 1; t <= timesteps_; ++t) {
    const string preactivation = AtTime("h_neuron_input", t);
    AddTimestepSum(net, t, dim, "W_hh", "W_xh", "W_xh_static", preactivation);
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
