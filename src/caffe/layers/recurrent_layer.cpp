#include "caffe/layers/recurrent_layer.hpp"

#include <climits>

#include "caffe/mode_math.hpp"
#include "caffe/net.hpp"

namespace caffe {

namespace {

void AddInputShape(InputParameter* input, const vector<int64_t>& shape) {
  BlobShape* blob_shape = input->add_shape();
  for (int64_t dim : shape) blob_shape->add_dim(dim);
}

// Makes the unrolled net's input `inner` a view of the values of bottom `outer`.
void ViewValues(const Blob& outer, Blob* inner) {
  inner->ReshapeLike(outer);
  inner->ShareData(outer);
}

}  // namespace

string RecurrentLayer::AtTime(const string& name, int64_t t) {
  return name + "_" + std::to_string(t);
}

LayerParameter* RecurrentLayer::AddLayer(NetParameter* net, const string& type, const string& name,
                                         const vector<string>& bottoms,
                                         const vector<string>& tops) {
  LayerParameter* layer = net->add_layer();
  layer->set_name(name);
  layer->set_type(type);
  for (const string& bottom : bottoms) layer->add_bottom(bottom);
  for (const string& top : tops) layer->add_top(top);
  return layer;
}

LayerParameter* RecurrentLayer::AddInnerProduct(NetParameter* net, const string& name,
                                                const string& bottom, const string& top,
                                                int64_t num_output, int axis, const string& weight,
                                                const string& bias) const {
  const RecurrentParameter& p = layer_param_.recurrent_param();
  LayerParameter* layer = AddLayer(net, "InnerProduct", name, {bottom}, {top});
  InnerProductParameter* product = layer->mutable_inner_product_param();
  product->set_num_output(static_cast<uint32_t>(num_output));
  product->set_axis(axis);
  product->set_bias_term(!bias.empty());
  *product->mutable_weight_filler() = p.weight_filler();
  layer->add_param()->set_name(weight);
  if (!bias.empty()) {
    *product->mutable_bias_filler() = p.bias_filler();
    layer->add_param()->set_name(bias);
  }
  return layer;
}

void RecurrentLayer::AddInputProducts(NetParameter* net, int64_t width, const string& x_weight,
                                      const string& bias, const string& static_weight) const {
  // One product over the T x N items rather than one per timestep.
  const string x_product = x_weight + "_x";
  AddInnerProduct(net, "x_transform", "x", x_product, width, 2, x_weight, bias);
  if (has_static_input_) {
    const string flat = static_weight + "_x_static_flat";
    AddInnerProduct(net, "x_static_transform", "x_static", flat, width, 1, static_weight, "");
    // The N x width product gets a leading axis of 1, the shape each timestep adds.
    ReshapeParameter* reshape =
        AddLayer(net, "Reshape", "x_static_reshape", {flat}, {static_weight + "_x_static"})
            ->mutable_reshape_param();
    reshape->mutable_shape()->add_dim(1);
    reshape->set_axis(0);
    reshape->set_num_axes(0);
  }
  // Without slice points the axis is cut into as many equal parts as there are tops.
  for (const string& name : {x_product, string("cont")}) {
    vector<string> steps;
    for (int64_t t = 1; t <= timesteps_; ++t) steps.push_back(AtTime(name, t));
    AddLayer(net, "Slice", name + "_slice", {name}, steps)->mutable_slice_param()->set_axis(0);
  }
}

void RecurrentLayer::AddTimestepSum(NetParameter* net, int64_t t, int64_t width,
                                    const string& state_weight, const string& x_weight,
                                    const string& static_weight, const string& top) const {
  const string conted = AtTime("h_conted", t - 1);
  AddLayer(net, "Scale", conted, {AtTime("h", t - 1), AtTime("cont", t)}, {conted})
      ->mutable_scale_param()
      ->set_axis(0);
  const string recurrent = AtTime(state_weight + "_h", t - 1);
  AddInnerProduct(net, AtTime(state_weight + "_transform", t), conted, recurrent, width, 2,
                  state_weight, "");
  vector<string> terms{recurrent, AtTime(x_weight + "_x", t)};
  if (has_static_input_) terms.push_back(static_weight + "_x_static");
  AddLayer(net, "Eltwise", top, terms, {top});  // SUM by default
}

void RecurrentLayer::CheckShapes(const vector<Blob*>& bottom, const vector<Blob*>& top) const {
  const Blob& x = *bottom[0];
  LAYER_REQUIRE(x.num_axes() >= 3 && x.count() > 0)
      << "bottom '" << bottom_name(0) << "' must be T x N x ... (time-major: T timesteps of N "
      << "streams, then at least one input axis) and not empty, found shape "
      << ShapeToString(x.shape());
  const int64_t timesteps = x.shape(0), streams = x.shape(1);
  const vector<int64_t> cont_shape{timesteps, streams};
  LAYER_REQUIRE(bottom[1]->shape() == cont_shape)
      << "bottom '" << bottom_name(1) << "' (the sequence continuation indicators) must be "
      << "T x N = " << ShapeToString(cont_shape) << " for bottom '" << bottom_name(0)
      << "' of shape " << ShapeToString(x.shape()) << ", found shape "
      << ShapeToString(bottom[1]->shape());
  if (has_static_input_) {
    const Blob& x_static = *bottom[2];
    LAYER_REQUIRE(x_static.num_axes() >= 2 && x_static.count() > 0 && x_static.shape(0) == streams)
        << "bottom '" << bottom_name(2)
        << "' (the static input) must be N x ... with N = " << streams << " (axis 1 of bottom '"
        << bottom_name(0) << "') and at least one input axis, found shape "
        << ShapeToString(x_static.shape());
  }
  const vector<int64_t> state_shape{1, streams, num_output_};
  for (int s = 0; s < NumExposedStates(); ++s) {
    const int b = FirstStateBottom() + s;
    LAYER_REQUIRE(bottom[b]->shape() == state_shape)
        << "bottom '" << bottom_name(b) << "' (the initial " << StateNames()[s]
        << ") must be 1 x N x num_output = " << ShapeToString(state_shape) << ", found shape "
        << ShapeToString(bottom[b]->shape());
  }
  for (size_t t = 0; t < top.size(); ++t) {
    for (size_t b = 0; b < bottom.size(); ++b) {
      LAYER_REQUIRE(top[t] != bottom[b])
          << "cannot run in place (top '" << top_name(static_cast<int>(t)) << "' is bottom '"
          << bottom_name(static_cast<int>(b)) << "'); give the top its own name";
    }
  }
  if (!unrolled_net_) return;
  LAYER_REQUIRE(timesteps == timesteps_)
      << "bottom '" << bottom_name(0) << "' now has " << timesteps
      << " timesteps (axis 0); the layer was set up for " << timesteps_
      << ", and its unrolled net has that fixed length";
  LAYER_REQUIRE(x.count(2) == input_dim_)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(x.shape()) << " has "
      << x.count(2) << " inputs per timestep and stream; the weights expect " << input_dim_;
  if (has_static_input_) {
    LAYER_REQUIRE(bottom[2]->count(1) == static_input_dim_)
        << "bottom '" << bottom_name(2) << "' of shape " << ShapeToString(bottom[2]->shape())
        << " has " << bottom[2]->count(1) << " inputs per stream; the weights expect "
        << static_input_dim_;
  }
}

void RecurrentLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const RecurrentParameter& p = layer_param_.recurrent_param();
  LAYER_REQUIRE(p.num_output() > 0) << "recurrent_param.num_output must be positive"
                                    << (p.has_num_output() ? "" : " (it is not set)");
  // An LSTM's gate inputs are 4 num_output wide, and InnerProduct counts them in int.
  LAYER_REQUIRE(int64_t{p.num_output()} <= INT_MAX / 4)
      << "recurrent_param.num_output " << p.num_output() << " is too large (at most " << INT_MAX / 4
      << ")";
  num_output_ = p.num_output();
  // The bottom count says whether x_static is there (SetUp has checked the range).
  has_static_input_ = static_cast<int>(bottom.size()) == MaxBottomBlobs();
  unrolled_net_.reset();  // a second SetUp builds anew
  CheckShapes(bottom, top);
  timesteps_ = bottom[0]->shape(0);
  streams_ = bottom[0]->shape(1);
  input_dim_ = bottom[0]->count(2);
  static_input_dim_ = has_static_input_ ? bottom[2]->count(1) : 0;

  // Weights that came with the layer parameter (or from an earlier SetUp) replace the
  // fillers' values.
  const vector<shared_ptr<Blob>> given = blobs_;
  BuildUnrolledNet(bottom);
  if (!given.empty()) {
    LAYER_REQUIRE(given.size() == blobs_.size())
        << "expected " << blobs_.size() << " weight blob(s), found " << given.size();
    for (size_t j = 0; j < given.size(); ++j) {
      LAYER_REQUIRE(given[j]->shape() == blobs_[j]->shape())
          << "weight blob " << j << " has shape " << ShapeToString(given[j]->shape())
          << ", expected " << ShapeToString(blobs_[j]->shape());
      blobs_[j]->CopyFrom(*given[j]);
    }
  }
  param_propagate_down_.assign(blobs_.size(), true);
  state_is_fresh_ = true;
}

void RecurrentLayer::BuildUnrolledNet(const vector<Blob*>& bottom) {
  const RecurrentParameter& p = layer_param_.recurrent_param();
  NetParameter net;
  net.set_name(name() + "_unrolled");
  // The net has no loss of its own: the gradient comes from outside through the
  // tops' diffs, so every layer must run backward regardless.
  net.set_force_backward(true);
  net.set_debug_info(p.debug_info());
  net.mutable_state()->set_phase(phase_);

  LayerParameter* input = AddLayer(&net, "Input", "input", {}, {"x", "cont"});
  InputParameter* shapes = input->mutable_input_param();
  AddInputShape(shapes, bottom[0]->shape());
  AddInputShape(shapes, bottom[1]->shape());
  if (has_static_input_) {
    input->add_top("x_static");
    AddInputShape(shapes, bottom[2]->shape());
  }
  const vector<string> states = StateNames();
  for (const string& state : states) {
    input->add_top(AtTime(state, 0));
    AddInputShape(shapes, {1, streams_, num_output_});
  }
  AddUnrolledLayers(&net);
  if (expose_hidden()) {
    // A layer of its own for each exposed final state: a Split whose backward copies
    // the top's gradient into the state's diff, where the net's own Split adds it to
    // the gradient from the timesteps that read the state.
    for (const string& state : states) {
      AddLayer(&net, "Split", state + "_final", {AtTime(state, timesteps_)}, {state + "_final"});
    }
  }

  try {
    unrolled_net_ = std::make_shared<Net>(net, shared_context(), "its unrolled net");
  } catch (const Error& e) {
    Fail() << e.what();
  }
  x_input_ = unrolled_net_->blob_by_name("x").get();
  cont_input_ = unrolled_net_->blob_by_name("cont").get();
  static_input_ = has_static_input_ ? unrolled_net_->blob_by_name("x_static").get() : nullptr;
  initial_states_.clear();
  final_states_.clear();
  outputs_ = {unrolled_net_->blob_by_name(OutputName()).get()};
  for (const string& state : states) {
    initial_states_.push_back(unrolled_net_->blob_by_name(AtTime(state, 0)).get());
    final_states_.push_back(unrolled_net_->blob_by_name(AtTime(state, timesteps_)).get());
    if (expose_hidden()) outputs_.push_back(unrolled_net_->blob_by_name(state + "_final").get());
  }
  gradient_bottoms_ = {0};
  gradient_inputs_ = {x_input_};
  if (has_static_input_) {
    gradient_bottoms_.push_back(2);
    gradient_inputs_.push_back(static_input_);
  }
  for (int s = 0; s < NumExposedStates(); ++s) {
    gradient_bottoms_.push_back(FirstStateBottom() + s);
    gradient_inputs_.push_back(initial_states_[s]);
  }
  unwanted_diffs_.clear();
  for (size_t k = 0; k < gradient_inputs_.size(); ++k) {
    unwanted_diffs_.push_back(std::make_shared<Blob>());
  }

  // The owners of the shared weights, in the order the net first uses them, become
  // blobs_; the net lists a layer's parameters together, in the layer's order.
  blobs_.clear();
  weight_uses_.clear();
  const vector<shared_ptr<Blob>>& params = unrolled_net_->params();
  const vector<int>& owners = unrolled_net_->param_owners();
  const vector<int>& layer_of = unrolled_net_->param_layer_indices();
  vector<int> blob_of(params.size(), -1);
  int position = 0;
  for (size_t q = 0; q < params.size(); ++q) {
    position = q > 0 && layer_of[q] == layer_of[q - 1] ? position + 1 : 0;
    if (owners[q] < 0) {
      blob_of[q] = static_cast<int>(blobs_.size());
      blobs_.push_back(params[q]);
      weight_uses_.emplace_back();
    } else {
      blob_of[q] = blob_of[owners[q]];
    }
    weight_uses_[blob_of[q]].emplace_back(layer_of[q], position);
  }
}

void RecurrentLayer::ShareUnrolledWeights() {
  const vector<shared_ptr<Blob>>& params = unrolled_net_->params();
  const vector<int>& owners = unrolled_net_->param_owners();
  for (size_t q = 0; q < params.size(); ++q) {
    if (owners[q] < 0) continue;
    params[q]->ShareData(*params[owners[q]]);
    params[q]->ShareDiff(*params[owners[q]]);
  }
}

void RecurrentLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  CheckShapes(bottom, top);
  if (bottom[0]->shape(1) != streams_) {
    streams_ = bottom[0]->shape(1);
    state_is_fresh_ = true;  // the last final state belongs to other streams
  }
  ViewValues(*bottom[0], x_input_);
  ViewValues(*bottom[1], cont_input_);
  if (has_static_input_) ViewValues(*bottom[2], static_input_);
  for (size_t s = 0; s < initial_states_.size(); ++s) {
    if (expose_hidden()) {
      ViewValues(*bottom[FirstStateBottom() + static_cast<int>(s)], initial_states_[s]);
    } else {
      initial_states_[s]->Reshape({1, streams_, num_output_});
    }
  }
  unrolled_net_->Reshape();
  ShareUnrolledWeights();
  // The tops view the outputs rather than the other way round: the net's own layers
  // re-point some outputs in their Reshape (a one-bottom Concat for T = 1, a Split).
  for (size_t i = 0; i < top.size(); ++i) {
    top[i]->ReshapeLike(*outputs_[i]);
    top[i]->ShareData(*outputs_[i]);
    top[i]->ShareDiff(*outputs_[i]);
  }
}

void RecurrentLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Mode mode = context().mode();
  if (!expose_hidden()) {
    // The state before the first timestep is the last Forward's final state, which
    // cont = 0 at a stream's first timestep then multiplies away.
    for (size_t s = 0; s < initial_states_.size(); ++s) {
      Blob* initial = initial_states_[s];
      if (state_is_fresh_) {
        math::set(initial->count(), 0.f, initial->mutable_cpu_data());
      } else {
        math::copy(mode, initial->count(), DataOn(mode, *final_states_[s]),
                   MutableDataOn(mode, initial));
      }
    }
  }
  state_is_fresh_ = false;
  unrolled_net_->Forward();
}

void RecurrentLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[1])
      << "cannot give bottom '" << bottom_name(1)
      << "' (the sequence continuation indicators) a gradient; set propagate_down: false for it";
  bool any_gradient = false;
  for (size_t k = 0; k < gradient_inputs_.size(); ++k) {
    const int b = gradient_bottoms_[k];
    if (propagate_down[b]) {
      gradient_inputs_[k]->ShareDiff(*bottom[b]);
      any_gradient = true;
    } else {
      // The unrolled net computes this gradient anyway; it must not land in a bottom
      // whose diff belongs to someone else.
      unwanted_diffs_[k]->ReshapeLike(*bottom[b]);
      gradient_inputs_[k]->ShareDiff(*unwanted_diffs_[k]);
    }
  }
  for (size_t j = 0; j < blobs_.size(); ++j) {
    const bool learns = param_propagate_down(static_cast<int>(j));
    any_gradient |= learns;
    for (const auto& use : weight_uses_[j]) {
      unrolled_net_->layers()[use.first]->set_param_propagate_down(use.second, learns);
    }
  }
  if (any_gradient) unrolled_net_->Backward();
}

}  // namespace caffe
