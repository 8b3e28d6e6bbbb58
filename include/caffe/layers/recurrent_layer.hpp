// The base of RNN and LSTM, after BVLC's `RecurrentLayer`: a layer that runs a net of
// its own, the recurrence unrolled over the T timesteps of its input.
//
// Bottoms: x (T x N x ...: time-major, T timesteps of N independent streams), cont
// (T x N: 0 where a stream's sequence starts, so that the state before it is not
// carried over, 1 where it continues), optionally x_static (N x ...: the same input at
// every timestep) and, with recurrent_param.expose_hidden, the initial state(s)
// (1 x N x num_output each). Tops: the output (T x N x num_output) and, with
// expose_hidden, the state(s) after the last timestep. Without expose_hidden the state
// at the end of one Forward is the state before the next one's first timestep, which
// cont = 1 there carries over (the net restarts from zeros when N changes).
//
// The unrolled net is an ordinary Net built in LayerSetUp from a NetParameter: an
// Input layer for x, cont, x_static and the initial states, then the subclass's
// per-timestep InnerProduct, Scale, Eltwise, TanH, LSTMUnit, Slice and Concat layers,
// whose weights are shared across timesteps by `param { name }`. It runs in this
// layer's context (mode, engines, random stream), so in a GPU net its layers run on
// the device. Its inputs view the bottoms' values, and each bottom that takes a
// gradient lends its diff to backward; the tops view the net's outputs, value and
// gradient. The net's shared weights (one blob per name, in the order the net first
// uses them) are this layer's blobs_, so the solver, the gradient exchange and the
// snapshots see exactly those. T is fixed when the layer is set up; N may change.
#ifndef CAFFE_LAYERS_RECURRENT_LAYER_HPP_
#define CAFFE_LAYERS_RECURRENT_LAYER_HPP_

#include <string>
#include <utility>
#include <vector>

#include "caffe/layer.hpp"

namespace caffe {

class Net;

class RecurrentLayer : public Layer {
 public:
  explicit RecurrentLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  int MinBottomBlobs() const override { return 2 + NumExposedStates(); }
  int MaxBottomBlobs() const override { return 3 + NumExposedStates(); }
  int ExactNumTopBlobs() const override { return 1 + NumExposedStates(); }
  // cont says where sequences start; it has no gradient.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

 protected:
  // What a subclass says about its recurrence. The state names ("h", or "h" and "c"):
  // the unrolled net's blob "<name>_0" is a state before the first timestep,
  // "<name>_<T>" after the last; exposed states follow this order.
  virtual vector<string> StateNames() const = 0;
  // The unrolled net's blob that top 0 views (T x N x num_output).
  virtual string OutputName() const = 0;
  // Appends the unrolled net's layers after its Input layer, whose tops are "x",
  // "cont", "x_static" (with a static input) and each state's "<name>_0".
  virtual void AddUnrolledLayers(NetParameter* net) const = 0;

  // Helpers for AddUnrolledLayers.
  // "<name>_<t>", the unrolled net's blob (or layer) for timestep t.
  static string AtTime(const string& name, int64_t t);
  static LayerParameter* AddLayer(NetParameter* net, const string& type, const string& name,
                                  const vector<string>& bottoms, const vector<string>& tops);
  // An InnerProduct over the axes from `axis` on, filled by recurrent_param's fillers,
  // whose weight (and bias, unless `bias` is empty) is the shared parameter so named.
  LayerParameter* AddInnerProduct(NetParameter* net, const string& name, const string& bottom,
                                  const string& top, int64_t num_output, int axis,
                                  const string& weight, const string& bias) const;
  // The products of the inputs for all timesteps at once, `width` wide: x by weight
  // `x_weight` plus bias `bias` (cut into timesteps "<x_weight>_x_<t>", t = 1..T), and
  // with a static input, x_static by `static_weight` ("<static_weight>_x_static",
  // 1 x N x width). Also cuts cont into its timesteps "cont_<t>".
  void AddInputProducts(NetParameter* net, int64_t width, const string& x_weight,
                        const string& bias, const string& static_weight) const;
  // Blob `top` at timestep t: `state_weight` times cont_t h_{t-1} (zero where a
  // sequence starts, so nothing before it leaks in), plus the inputs' products at t
  // (AddInputProducts with these `x_weight` and `static_weight`).
  void AddTimestepSum(NetParameter* net, int64_t t, int64_t width, const string& state_weight,
                      const string& x_weight, const string& static_weight, const string& top) const;

  // What the unrolled net is built for (set before AddUnrolledLayers runs).
  int64_t timesteps_ = 0;   // T
  int64_t streams_ = 0;     // N
  int64_t num_output_ = 0;  // the state's and the output's dimension
  bool has_static_input_ = false;

  // The unrolled net picks each of its layers' passes from the shared context's mode,
  // so one body serves both modes.
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {
    Forward_cpu(bottom, top);
  }
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {
    Backward_cpu(top, propagate_down, bottom);
  }
#endif

 private:
  bool expose_hidden() const { return layer_param_.recurrent_param().expose_hidden(); }
  int NumExposedStates() const {
    return expose_hidden() ? static_cast<int>(StateNames().size()) : 0;
  }
  // The index of the first initial-state bottom (with expose_hidden).
  int FirstStateBottom() const { return has_static_input_ ? 3 : 2; }
  // Refuses bottoms whose shapes do not fit each other (or, once the net is built, the
  // net's fixed T and input sizes) and tops that are bottoms.
  void CheckShapes(const vector<Blob*>& bottom, const vector<Blob*>& top) const;
  // Builds the unrolled net for the bottoms' shapes and makes its weights blobs_.
  void BuildUnrolledNet(const vector<Blob*>& bottom);
  // Points each timestep's copy of a shared weight at its owner's memory again. The
  // net shares them once, when it is built; a later ShareData on an owner (a test
  // net's Net::ShareTrainedLayersWith, or an outer net sharing this layer's weights by
  // name) reaches only the owner, which is this layer's blob.
  void ShareUnrolledWeights();

  shared_ptr<Net> unrolled_net_;
  // The unrolled net's inputs that view bottoms: x, cont, x_static (or null).
  Blob* x_input_ = nullptr;
  Blob* cont_input_ = nullptr;
  Blob* static_input_ = nullptr;
  // Per state: the unrolled net's "<name>_0" and "<name>_<T>".
  vector<Blob*> initial_states_, final_states_;
  // The unrolled net's blob behind each top.
  vector<Blob*> outputs_;
  // The bottoms that take a gradient (x, x_static, exposed states), the unrolled net's
  // input for each, and a diff for it to write when the bottom wants none.
  vector<int> gradient_bottoms_;
  vector<Blob*> gradient_inputs_;
  vector<shared_ptr<Blob>> unwanted_diffs_;
  // Per entry of blobs_: the (layer index, param index) of every use in the unrolled
  // net, so that param_propagate_down reaches each timestep's layer.
  vector<vector<std::pair<int, int>>> weight_uses_;
  // The input sizes the net was built for: x's per-item count (axes 2 on) and
  // x_static's (axes 1 on).
  int64_t input_dim_ = 0, static_input_dim_ = 0;
  // True until a Forward has left a final state to carry over (again after N changes).
  bool state_is_fresh_ = true;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_RECURRENT_LAYER_HPP_
