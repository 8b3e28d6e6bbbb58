#include "caffe/net.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "caffe/layer_factory.hpp"
#include "caffe/util/buffer_sharing_plan.hpp"
#include "caffe/util/hdf5.hpp"
#include "caffe/util/insert_splits.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/upgrade_proto.hpp"

namespace caffe {

namespace {

class SilentErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// Line (from 1) of the `layer` entry named `layer_name` in the prototxt `file`, or 0
// when the file cannot be read or parsed as a net or holds no such layer.
int LayerLineInFile(const string& file, const string& layer_name) {
  string text;
  try {
    text = ReadFileToString(file);
  } catch (const Error&) {
    return 0;
  }
  google::protobuf::TextFormat::Parser parser;
  google::protobuf::TextFormat::ParseInfoTree locations;
  SilentErrorCollector silent;
  parser.RecordErrorsTo(&silent);
  parser.WriteLocationsTo(&locations);
  NetParameter param;
  if (!parser.ParseFromString(text, &param)) return 0;
  const auto* field = NetParameter::descriptor()->FindFieldByName("layer");
  for (int i = 0; i < param.layer_size(); ++i) {
    if (param.layer(i).name() == layer_name) return locations.GetLocation(field, i).line + 1;
  }
  return 0;
}

// Errors raised while building or running a net read "<source>: layer 'NAME' ..." and
// carry the layer they are about (Error::layer). Parsed protos carry no positions, so
// the layer's line is looked up in the source file only now, on the error path, and
// the error becomes "<source>:LINE: layer ...".
[[noreturn]] void ThrowWithLayerLine(const string& source, const Error& error) {
  const string message = error.what();
  const string prefix = source + ": ";
  if (!error.layer().empty() && message.compare(0, prefix.size(), prefix) == 0) {
    const int line = LayerLineInFile(source, error.layer());
    if (line > 0) {
      throw Error(source + ":" + std::to_string(line) + ": " + message.substr(prefix.size()),
                  error.layer());
    }
  }
  throw error;
}

bool EndsWith(const string& text, const string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Runs one step of building or running `layer`; an error it raises without naming its
// layer is about this one.
template <typename Step>
void AtLayer(const string& layer, Step step) {
  try {
    step();
  } catch (const Error& e) {
    if (!e.layer().empty()) throw;
    throw Error(e.what(), layer);
  }
}

}  // namespace

Net::Net(const NetParameter& param, shared_ptr<Context> context, const string& source)
    : source_(source.empty() ? (param.name().empty() ? "<net>" : param.name()) : source),
      context_(std::move(context)) {
  CHECK(context_);
  NetParameter upgraded = param;
  UpgradeNetAsNeeded(source_, &upgraded);
  try {
    Init(upgraded);
  } catch (const Error& e) {
    ThrowWithLayerLine(source_, e);
  }
}

Net::Net(const string& filename, Phase phase, shared_ptr<Context> context, int level,
         const vector<string>& stages)
    : source_(filename), context_(std::move(context)) {
  CHECK(context_);
  NetParameter param;
  ReadNetParamsFromTextFile(filename, &param);
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->set_level(level);
  param.mutable_state()->clear_stage();
  for (const string& stage : stages) param.mutable_state()->add_stage(stage);
  try {
    Init(param);
  } catch (const Error& e) {
    ThrowWithLayerLine(source_, e);
  }
}

ErrorBuilder Net::Fail() const { return ErrorBuilder(source_ + ": "); }

bool Net::StateMeetsRule(const NetState& state, const NetStateRule& rule) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  for (const string& stage : rule.stage()) {
    if (std::find(state.stage().begin(), state.stage().end(), stage) == state.stage().end()) {
      return false;
    }
  }
  for (const string& stage : rule.not_stage()) {
    if (std::find(state.stage().begin(), state.stage().end(), stage) != state.stage().end()) {
      return false;
    }
  }
  return true;
}

void Net::FilterNet(const NetParameter& param, NetParameter* filtered) {
  const NetState& state = param.state();
  filtered->CopyFrom(param);
  filtered->clear_layer();
  for (const LayerParameter& layer : param.layer()) {
    CAFFE_REQUIRE(layer.include_size() == 0 || layer.exclude_size() == 0).AboutLayer(layer.name())
        << "layer '" << layer.name() << "': specify either include or exclude rules, not both";
    // With include rules a layer is in only if some rule matches; with exclude rules
    // it is in unless some rule matches.
    bool keep = layer.include_size() == 0;
    for (const NetStateRule& rule : layer.exclude()) {
      if (StateMeetsRule(state, rule)) keep = false;
    }
    for (const NetStateRule& rule : layer.include()) {
      if (StateMeetsRule(state, rule)) keep = true;
    }
    if (keep) filtered->add_layer()->CopyFrom(layer);
  }
}

void Net::Init(const NetParameter& in_param) {
  phase_ = in_param.state().phase();
  force_backward_ = in_param.force_backward();
  debug_info_ = in_param.debug_info();
  NetParameter param = FilterAndSplit(in_param);
  name_ = param.name();
  const int num_layers = param.layer_size();
  bottom_vecs_.resize(num_layers);
  top_vecs_.resize(num_layers);
  bottom_id_vecs_.resize(num_layers);
  top_id_vecs_.resize(num_layers);
  bottom_need_backward_.resize(num_layers);

  std::set<string> available_blobs;
  std::map<string, int> blob_name_to_idx;
  for (int layer_id = 0; layer_id < num_layers; ++layer_id) {
    try {
      AtLayer(param.layer(layer_id).name(), [&] {
        bool need_backward = WireLayer(param, layer_id, &available_blobs, &blob_name_to_idx);
        need_backward |= AppendLayerParams(param, layer_id);
        layer_need_backward_.push_back(need_backward);
        if (need_backward) {
          for (int top_id : top_id_vecs_[layer_id]) blob_need_backward_[top_id] = true;
        }
      });
    } catch (const Error& e) {
      // Messages of the net itself already start with the source; the layers' do not.
      const string message = e.what();
      if (message.compare(0, source_.size() + 2, source_ + ": ") == 0) throw;
      Fail().AboutLayer(e.layer()) << message;
    }
  }
  AnalyzeBackward(param);
  ConnectBottomProducers();
  for (const string& blob_name : available_blobs) {
    const int idx = blob_name_to_idx[blob_name];
    net_output_blobs_.push_back(blobs_[idx].get());
    net_output_blob_indices_.push_back(idx);
  }
  for (size_t i = 0; i < blob_names_.size(); ++i) blob_names_index_[blob_names_[i]] = static_cast<int>(i);
}

NetParameter Net::FilterAndSplit(const NetParameter& in_param) const {
  NetParameter filtered;
  NetParameter param;
  try {
    FilterNet(in_param, &filtered);
    InsertSplits(filtered, &param);
  } catch (const Error& e) {
    Fail().AboutLayer(e.layer()) << e.what();
  }
  return param;
}

bool Net::WireLayer(NetParameter& param, int layer_id, std::set<string>* available_blobs,
                    std::map<string, int>* blob_name_to_idx) {
  LayerParameter* layer_param = param.mutable_layer(layer_id);
  if (!layer_param->has_phase()) layer_param->set_phase(phase_);
  CAFFE_REQUIRE(!layer_param->type().empty())
      << source_ << ": layer '" << layer_param->name() << "' has no type";
  CAFFE_REQUIRE(layer_names_index_.count(layer_param->name()) == 0)
      << source_ << ": two layers are named '" << layer_param->name() << "'";
  CAFFE_REQUIRE(layer_param->propagate_down_size() == 0 ||
                layer_param->propagate_down_size() == layer_param->bottom_size())
      << source_ << ": layer '" << layer_param->name()
      << "': propagate_down must be given once per bottom";
  // The context's mode and default_engine pick the engine of a DEFAULT layer.
  layers_.push_back(LayerRegistry::CreateLayer(*layer_param, *context_));
  layers_.back()->set_context(context_);
  layer_names_.push_back(layer_param->name());
  layer_names_index_[layer_param->name()] = layer_id;

  bool need_backward = false;
  for (int bottom_id = 0; bottom_id < layer_param->bottom_size(); ++bottom_id) {
    const int blob_id = AppendBottom(param, layer_id, bottom_id, available_blobs, blob_name_to_idx);
    need_backward |= blob_need_backward_[blob_id];
  }
  for (int top_id = 0; top_id < layer_param->top_size(); ++top_id) {
    AppendTop(param, layer_id, top_id, available_blobs, blob_name_to_idx);
    if (layer_param->type() == "Input") net_input_blobs_.push_back(top_vecs_[layer_id].back());
  }
  // Layers such as losses can create their own anonymous tops.
  Layer* layer = layers_[layer_id].get();
  if (layer->AutoTopBlobs()) {
    const int needed = std::max(layer->MinTopBlobs(), layer->ExactNumTopBlobs());
    for (int top_id = layer_param->top_size(); top_id < needed; ++top_id) {
      AppendTop(param, layer_id, top_id, nullptr, nullptr);
    }
  }

  layer->SetUp(bottom_vecs_[layer_id], top_vecs_[layer_id]);
  LOG_IF(INFO, context_->rank() == 0)
      << "Setting up " << layer_names_[layer_id] << " (" << layer->type() << ")";
  for (size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
    const int blob_id = top_id_vecs_[layer_id][top_id];
    if (blob_loss_weights_.size() <= static_cast<size_t>(blob_id)) {
      blob_loss_weights_.resize(blob_id + 1, 0.f);
    }
    blob_loss_weights_[blob_id] = layer->loss(static_cast<int>(top_id));
    VLOG(1) << "Top shape: " << top_vecs_[layer_id][top_id]->shape_string();
  }
  return need_backward;
}

bool Net::AppendLayerParams(const NetParameter& param, int layer_id) {
  const LayerParameter& layer_param = param.layer(layer_id);
  Layer* layer = layers_[layer_id].get();
  const int num_param_blobs = static_cast<int>(layer->blobs().size());
  CAFFE_REQUIRE(layer_param.param_size() <= num_param_blobs)
      << source_ << ": layer '" << layer_param.name() << "' has " << num_param_blobs
      << " parameter blob(s) but " << layer_param.param_size() << " param specs";
  bool learns_any = false;
  for (int param_id = 0; param_id < num_param_blobs; ++param_id) {
    const bool learns = param_id >= layer_param.param_size() ||
                        layer_param.param(param_id).lr_mult() != 0;
    // As in Caffe: a use with lr_mult 0 computes no gradient, so that blob's diff
    // stays zero (on every rank: it is never exchanged).
    if (!learns) layer->set_param_propagate_down(param_id, false);
    learns_any |= learns && layer->param_propagate_down(param_id);
    AppendParam(param, layer_id, param_id);
  }
  return learns_any;
}

void Net::AnalyzeBackward(const NetParameter& param) {
  const int num_layers = param.layer_size();
  // Walk backwards: a layer needs backward only if something it feeds leads to a loss.
  std::set<string> blobs_under_loss;
  std::set<string> blobs_skip_backward;
  for (int layer_id = num_layers - 1; layer_id >= 0; --layer_id) {
    bool contributes = false;
    bool skip_propagate = true;
    for (size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
      const string& blob_name = blob_names_[top_id_vecs_[layer_id][top_id]];
      if (layers_[layer_id]->loss(static_cast<int>(top_id)) != 0 ||
          blobs_under_loss.count(blob_name)) {
        contributes = true;
      }
      if (!blobs_skip_backward.count(blob_name)) skip_propagate = false;
    }
    if (contributes && skip_propagate) contributes = false;
    if (!contributes) {
      layer_need_backward_[layer_id] = false;
      for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
        bottom_need_backward_[layer_id][b] = false;
      }
    }
    const LayerParameter& layer_param = param.layer(layer_id);
    for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
      const string& blob_name = blob_names_[bottom_id_vecs_[layer_id][b]];
      if (contributes) {
        blobs_under_loss.insert(blob_name);
      } else {
        bottom_need_backward_[layer_id][b] = false;
      }
      if (!bottom_need_backward_[layer_id][b]) blobs_skip_backward.insert(blob_name);
      if (layer_param.propagate_down_size() > 0 && !layer_param.propagate_down(b)) {
        blobs_skip_backward.insert(blob_name);
      }
    }
  }
  // force_backward: every layer that can propagate does.
  if (param.force_backward()) {
    for (int layer_id = 0; layer_id < num_layers; ++layer_id) {
      layer_need_backward_[layer_id] = true;
      for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
        const bool allowed = layers_[layer_id]->AllowForceBackward(static_cast<int>(b));
        bottom_need_backward_[layer_id][b] = bottom_need_backward_[layer_id][b] || allowed;
        blob_need_backward_[bottom_id_vecs_[layer_id][b]] =
            blob_need_backward_[bottom_id_vecs_[layer_id][b]] || allowed;
      }
    }
  }
}

void Net::ConnectBottomProducers() {
  std::map<const SyncedMemory*, int> blobs_per_data;
  for (const auto& blob : blobs_) ++blobs_per_data[blob->data().get()];
  vector<Layer*> last_writer(blobs_.size(), nullptr);
  bottom_producers_.assign(layers_.size(), {});
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t k = 0; k < bottom_id_vecs_[i].size(); ++k) {
      const int blob = bottom_id_vecs_[i][k];
      // Through an alias (Split, Flatten) other layers could change the values after
      // the producer wrote them, so only a blob with memory of its own qualifies.
      const bool own_memory = blobs_per_data[blobs_[blob]->data().get()] == 1;
      bottom_producers_[i].push_back(own_memory ? last_writer[blob] : nullptr);
      layers_[i]->set_bottom_producer(static_cast<int>(k), bottom_producers_[i].back());
    }
    for (size_t t = 0; t < top_id_vecs_[i].size(); ++t) {
      last_writer[top_id_vecs_[i][t]] = t == 0 ? layers_[i].get() : nullptr;
    }
  }
}

void Net::AppendTop(const NetParameter& param, int layer_id, int top_id,
                    std::set<string>* available_blobs, std::map<string, int>* blob_name_to_idx) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const string blob_name = top_id < layer_param.top_size()
                               ? layer_param.top(top_id)
                               : layer_param.name() + "_anonymous_top_" + std::to_string(top_id);
  const bool in_place = blob_name_to_idx && top_id < layer_param.bottom_size() &&
                        layer_param.bottom(top_id) == blob_name;
  if (in_place) {
    const int blob_id = (*blob_name_to_idx)[blob_name];
    top_vecs_[layer_id].push_back(blobs_[blob_id].get());
    top_id_vecs_[layer_id].push_back(blob_id);
  } else {
    if (blob_name_to_idx && blob_name_to_idx->count(blob_name)) {
      // Re-producing a blob that a later layer already read would make the graph
      // ambiguous; only in-place (top == bottom at the same index) may reuse a name.
      const bool is_bottom = std::find(layer_param.bottom().begin(), layer_param.bottom().end(),
                                       blob_name) != layer_param.bottom().end();
      Fail() << "layer '" << layer_param.name() << "': top blob '" << blob_name
             << "' is produced by more than one layer"
             << (is_bottom ? " (an in-place top must sit at the same index as its bottom)"
                           : "");
    }
    auto blob = std::make_shared<Blob>();
    const int blob_id = static_cast<int>(blobs_.size());
    blobs_.push_back(blob);
    blob_names_.push_back(blob_name);
    blob_need_backward_.push_back(false);
    if (blob_name_to_idx) (*blob_name_to_idx)[blob_name] = blob_id;
    top_vecs_[layer_id].push_back(blob.get());
    top_id_vecs_[layer_id].push_back(blob_id);
  }
  if (available_blobs) available_blobs->insert(blob_name);
}

int Net::AppendBottom(const NetParameter& param, int layer_id, int bottom_id,
                      std::set<string>* available_blobs, std::map<string, int>* blob_name_to_idx) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const string& blob_name = layer_param.bottom(bottom_id);
  if (!available_blobs->count(blob_name)) {
    Fail() << "layer '" << layer_param.name() << "' (" << layer_param.type()
           << "): bottom blob '" << blob_name
           << "' is not produced by any earlier layer (layers run in file order)";
  }
  const int blob_id = (*blob_name_to_idx)[blob_name];
  bottom_vecs_[layer_id].push_back(blobs_[blob_id].get());
  bottom_id_vecs_[layer_id].push_back(blob_id);
  available_blobs->erase(blob_name);
  bool need_backward = blob_need_backward_[blob_id];
  if (layer_param.propagate_down_size() > 0) need_backward = layer_param.propagate_down(bottom_id);
  bottom_need_backward_[layer_id].push_back(need_backward);
  return blob_id;
}

void Net::AppendParam(const NetParameter& param, int layer_id, int param_id) {
  const LayerParameter& layer_param = layers_[layer_id]->layer_param();
  const int param_size = layer_param.param_size();
  const string param_name =
      param_id < param_size ? layer_param.param(param_id).name() : string();
  const int net_param_id = static_cast<int>(params_.size());
  params_.push_back(layers_[layer_id]->blobs()[param_id]);
  param_layer_indices_.push_back(layer_id);
  param_layer_positions_.push_back({layer_id, param_id});
  const ParamSpec default_spec;
  const ParamSpec& spec = param_id < param_size ? layer_param.param(param_id) : default_spec;

  if (param_name.empty() || !param_names_index_.count(param_name)) {
    // An owner: either unnamed or the first layer to use this name.
    if (!param_name.empty()) param_names_index_[param_name] = net_param_id;
    param_owners_.push_back(-1);
    learnable_param_ids_.push_back(net_param_id);
    learnable_params_.push_back(params_.back().get());
    learnable_param_names_.push_back(layer_names_[layer_id] + "[" + std::to_string(param_id) + "]");
    params_lr_.push_back(spec.lr_mult());
    params_weight_decay_.push_back(spec.decay_mult());
    return;
  }
  const int owner_id = param_names_index_[param_name];
  param_owners_.push_back(owner_id);
  Blob* owner = params_[owner_id].get();
  Blob* mine = params_.back().get();
  const auto& owner_pos = param_layer_positions_[owner_id];
  if (spec.share_mode() == ParamSpec::PERMISSIVE) {
    CAFFE_REQUIRE(owner->count() == mine->count())
        << source_ << ": shared parameter '" << param_name << "' has " << owner->count()
        << " elements in layer '" << layer_names_[owner_pos.first] << "' but " << mine->count()
        << " in layer '" << layer_names_[layer_id] << "'";
  } else {
    CAFFE_REQUIRE(owner->shape() == mine->shape())
        << source_ << ": shared parameter '" << param_name << "' has shape "
        << ShapeToString(owner->shape()) << " in layer '" << layer_names_[owner_pos.first]
        << "' but " << ShapeToString(mine->shape()) << " in layer '" << layer_names_[layer_id]
        << "' (use share_mode: PERMISSIVE to share by count)";
  }
  // Share both value and gradient: each user's backward adds into the one diff.
  mine->ShareData(*owner);
  mine->ShareDiff(*owner);
  const int learnable_index = static_cast<int>(
      std::find(learnable_param_ids_.begin(), learnable_param_ids_.end(), owner_id) -
      learnable_param_ids_.begin());
  if (spec.has_lr_mult()) {
    CAFFE_REQUIRE(!layer_param.param(param_id).has_lr_mult() ||
                  params_lr_[learnable_index] == spec.lr_mult() ||
                  params_lr_[learnable_index] == 1.f)
        << source_ << ": shared parameter '" << param_name << "' has conflicting lr_mult";
    params_lr_[learnable_index] = spec.lr_mult();
  }
  if (spec.has_decay_mult()) params_weight_decay_[learnable_index] = spec.decay_mult();
}

float Net::ForwardFromTo(int start, int end) {
  CHECK_GE(start, 0);
  CHECK_LT(end, static_cast<int>(layers_.size()));
  float loss = 0;
  for (int i = start; i <= end; ++i) {
    try {
      loss += layers_[i]->Forward(bottom_vecs_[i], top_vecs_[i]);
    } catch (const Error& e) {
      // Bad data (a label out of range, an undecodable record) shows up only here.
      ThrowWithLayerLine(source_, Error(source_ + ": " + e.what(), layer_names_[i]));
    }
  }
  return loss;
}

const vector<Blob*>& Net::Forward(float* loss) {
  const float total = layers_.empty() ? 0.f : ForwardFromTo(0, static_cast<int>(layers_.size()) - 1);
  if (loss) *loss = total;
  return net_output_blobs_;
}

void Net::BackwardFromTo(int start, int end) {
  CHECK_GE(end, 0);
  CHECK_LT(start, static_cast<int>(layers_.size()));
  CAFFE_REQUIRE(!share_data_)
      << source_ << ": this net's activations share memory between layers "
      << "(ShareActivationData), so it runs forward only; backward would read overwritten values";
  for (int i = start; i >= end; --i) {
    if (layer_need_backward_[i]) {
      try {
        layers_[i]->Backward(top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
      } catch (const Error& e) {
        ThrowWithLayerLine(source_, Error(source_ + ": " + e.what(), layer_names_[i]));
      }
    }
    // Outside the try: the observer's errors (the exchange's) are not the net's.
    if (backward_observer_) backward_observer_(i);
  }
}

int Net::LearnableIndexOf(size_t p) const {
  const int owner = param_owners_[p] < 0 ? static_cast<int>(p) : param_owners_[p];
  const auto it = std::find(learnable_param_ids_.begin(), learnable_param_ids_.end(), owner);
  return it == learnable_param_ids_.end() ? -1 : static_cast<int>(it - learnable_param_ids_.begin());
}

vector<int> Net::learnable_param_ready_layers() const {
  vector<int> ready(learnable_params_.size(), static_cast<int>(layers_.size()));
  for (size_t p = 0; p < params_.size(); ++p) {
    const int learnable = LearnableIndexOf(p);
    if (learnable < 0) continue;
    int& layer = ready[learnable];
    layer = std::min(layer, param_layer_indices_[p]);
  }
  return ready;
}

vector<bool> Net::learnable_param_receives_gradient() const {
  vector<bool> receives(learnable_params_.size(), false);
  for (size_t p = 0; p < params_.size(); ++p) {
    const int learnable = LearnableIndexOf(p);
    if (learnable < 0) continue;
    const int layer = param_layer_positions_[p].first;
    const int position = param_layer_positions_[p].second;
    if (layer_need_backward_[layer] && layers_[layer]->param_propagate_down(position)) {
      receives[learnable] = true;
    }
  }
  return receives;
}

vector<bool> Net::learnable_param_is_data_statistic() const {
  vector<bool> statistic(learnable_params_.size(), false);
  for (size_t l = 0; l < learnable_param_ids_.size(); ++l) {
    const auto& position = param_layer_positions_[learnable_param_ids_[l]];
    statistic[l] = layers_[position.first]->ParamIsDataStatistic(position.second);
  }
  return statistic;
}

void Net::Backward() {
  if (!layers_.empty()) BackwardFromTo(static_cast<int>(layers_.size()) - 1, 0);
}

float Net::ForwardBackward() {
  float loss;
  Forward(&loss);
  Backward();
  return loss;
}

void Net::Reshape() {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->Reshape(bottom_vecs_[i], top_vecs_[i]);
  if (share_diffs_) ShareActivationDiffs(diff_keep_);
  if (share_data_) ShareActivationData(data_keep_);
}

vector<vector<int>> Net::AliasGroups(
    const std::function<const SyncedMemory*(const Blob&)>& memory_of) const {
  vector<vector<int>> groups;
  std::map<const SyncedMemory*, int> group_of_memory;
  for (size_t b = 0; b < blobs_.size(); ++b) {
    const SyncedMemory* memory = memory_of(*blobs_[b]);
    if (!memory) continue;
    auto inserted = group_of_memory.emplace(memory, static_cast<int>(groups.size()));
    if (inserted.second) groups.emplace_back();
    groups[inserted.first->second].push_back(static_cast<int>(b));
  }
  return groups;
}

std::set<int> Net::BlobsLeftAlone(const std::set<string>& keep, const char* purpose) const {
  for (const string& name : keep) {
    CAFFE_REQUIRE(has_blob(name)) << source_ << ": the net has no blob '" << name << "' "
                                  << purpose;
  }
  std::set<int> alone;
  for (const string& name : keep) alone.insert(blob_names_index_.at(name));
  for (int b : net_output_blob_indices_) alone.insert(b);
  for (size_t b = 0; b < blobs_.size(); ++b) {
    const int id = static_cast<int>(b);
    if (b < blob_loss_weights_.size() && blob_loss_weights_[b] != 0.f) alone.insert(id);
    if (std::find(net_input_blobs_.begin(), net_input_blobs_.end(), blobs_[b].get()) !=
        net_input_blobs_.end()) {
      alone.insert(id);
    }
  }
  return alone;
}

Net::ActivationSharing Net::ShareBuffers(
    const vector<vector<int>>& groups, const vector<int>& first, const vector<int>& last,
    const vector<bool>& eligible, const std::function<size_t(const Blob&)>& bytes_of,
    const std::function<void(Blob*, shared_ptr<SyncedMemory>)>& assign) {
  vector<BufferUse> uses;
  vector<int> use_group;
  for (size_t g = 0; g < groups.size(); ++g) {
    BufferUse use;
    use.first = std::numeric_limits<int>::max();
    use.last = -1;
    bool all_eligible = true;
    for (int b : groups[g]) {
      all_eligible &= eligible[b];
      use.first = std::min(use.first, first[b]);
      use.last = std::max(use.last, last[b]);
      // Room for the blob's capacity, so a Reshape within it never outgrows the buffer.
      use.bytes = std::max({use.bytes, bytes_of(*blobs_[b]),
                            static_cast<size_t>(blobs_[b]->capacity()) * sizeof(float)});
    }
    if (!all_eligible || use.last < 0 || use.bytes == 0) continue;
    uses.push_back(use);
    use_group.push_back(static_cast<int>(g));
  }
  const BufferSharingPlan plan = PlanSharedBuffers(uses);
  vector<shared_ptr<SyncedMemory>> buffers;
  for (size_t bytes : plan.buffer_bytes) buffers.push_back(std::make_shared<SyncedMemory>(bytes));
  ActivationSharing report;
  for (size_t u = 0; u < uses.size(); ++u) {
    for (int b : groups[use_group[u]]) {
      assign(blobs_[b].get(), buffers[plan.buffer_of[u]]);
      ++report.blobs;
    }
  }
  report.buffers = static_cast<int>(buffers.size());
  report.bytes_before = plan.bytes_before;
  report.bytes_after = plan.bytes_after;
  return report;
}

Net::ActivationSharing Net::ShareActivationDiffs(const std::set<string>& keep) {
  if (force_backward_ || debug_info_) {
    ActivationSharing report;
    report.skipped = force_backward_ ? "force_backward is set" : "debug_info is set";
    return report;
  }
  const std::set<int> alone = BlobsLeftAlone(keep, "to keep out of the shared activation memory");
  if (diff_alias_groups_.empty()) {
    diff_alias_groups_ = AliasGroups([](const Blob& blob) { return blob.diff().get(); });
  }
  share_diffs_ = true;
  diff_keep_ = keep;

  // Steps of the backward pass: the last layer runs at step 0. A group shares only
  // if backward writes one of its blobs; a diff nothing writes stays zero, as its
  // readers (a Split summing a top nobody propagates into) expect.
  const int num_layers = static_cast<int>(layers_.size());
  vector<int> first(blobs_.size(), num_layers), last(blobs_.size(), -1);
  vector<bool> written(blobs_.size(), false);
  for (int i = 0; i < num_layers; ++i) {
    if (!layer_need_backward_[i]) continue;
    const int step = num_layers - 1 - i;
    auto touch = [&](int blob) {
      first[blob] = std::min(first[blob], step);
      last[blob] = std::max(last[blob], step);
    };
    for (int blob : top_id_vecs_[i]) touch(blob);
    for (size_t k = 0; k < bottom_id_vecs_[i].size(); ++k) {
      touch(bottom_id_vecs_[i][k]);
      if (bottom_need_backward_[i][k]) written[bottom_id_vecs_[i][k]] = true;
    }
  }
  vector<bool> eligible(blobs_.size(), true);
  for (int b : alone) eligible[b] = false;
  for (const auto& group : diff_alias_groups_) {
    bool any_written = false;
    for (int b : group) any_written |= written[b];
    if (!any_written) for (int b : group) eligible[b] = false;
  }
  return ShareBuffers(
      diff_alias_groups_, first, last, eligible,
      [](const Blob& blob) { return blob.diff()->size(); },
      [](Blob* blob, shared_ptr<SyncedMemory> memory) { blob->SetDiffMemory(std::move(memory)); });
}

int Net::FoldChannelScales() {
  if (force_backward_ || debug_info_) return 0;
  int folded = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool in_place = !bottom_vecs_[i].empty() && !top_vecs_[i].empty() &&
                          bottom_vecs_[i][0] == top_vecs_[i][0];
    Layer* producer = in_place ? bottom_producers_[i][0] : nullptr;
    if (producer && layers_[i]->FoldChannelScaleInto(producer)) ++folded;
  }
  return folded;
}

Net::ActivationSharing Net::ShareActivationData(const std::set<string>& keep) {
  ActivationSharing report;
  if (debug_info_) {
    report.skipped = "debug_info is set";
    return report;
  }
  std::set<int> alone = BlobsLeftAlone(keep, "to keep out of the shared activation memory");
  if (data_alias_groups_.empty()) {
    data_alias_groups_ = AliasGroups([](const Blob& blob) { return blob.data().get(); });
  }
  share_data_ = true;
  data_keep_ = keep;

  // Steps of the forward pass: layer i runs at step i. The data layers' tops keep
  // their own memory: they are the batch a caller may look at.
  const int num_layers = static_cast<int>(layers_.size());
  vector<int> first(blobs_.size(), num_layers), last(blobs_.size(), -1);
  for (int i = 0; i < num_layers; ++i) {
    for (int blob : top_id_vecs_[i]) {
      first[blob] = std::min(first[blob], i);
      last[blob] = std::max(last[blob], i);
      if (bottom_id_vecs_[i].empty()) alone.insert(blob);
    }
    for (int blob : bottom_id_vecs_[i]) {
      first[blob] = std::min(first[blob], i);
      last[blob] = std::max(last[blob], i);
    }
  }
  vector<bool> eligible(blobs_.size(), true);
  for (int b : alone) eligible[b] = false;
  return ShareBuffers(
      data_alias_groups_, first, last, eligible,
      [](const Blob& blob) { return blob.data()->size(); },
      [](Blob* blob, shared_ptr<SyncedMemory> memory) { blob->SetDataMemory(std::move(memory)); });
}

void Net::ClearParamDiffs() {
  for (Blob* blob : learnable_params_) {
    if (blob->count() == 0) continue;
    if (context_->mode() == Mode::GPU) {
#ifdef USE_CUDA
      math::gpu_set(blob->count(), 0.f, blob->mutable_gpu_diff());
      continue;
#endif
    }
    math::set(blob->count(), 0.f, blob->mutable_cpu_diff());
  }
}

void Net::Update() {
  for (Blob* blob : learnable_params_) blob->Update();
}

void Net::CopyTrainedLayersFrom(const NetParameter& param) {
  for (const LayerParameter& source_layer : param.layer()) {
    auto it = layer_names_index_.find(source_layer.name());
    if (it == layer_names_index_.end()) continue;
    Layer* layer = layers_[it->second].get();
    vector<shared_ptr<Blob>>& target = layer->blobs();
    CAFFE_REQUIRE(static_cast<int>(target.size()) == source_layer.blobs_size())
        << "layer '" << source_layer.name() << "': the weights hold "
        << source_layer.blobs_size() << " blob(s), the net expects " << target.size();
    for (size_t j = 0; j < target.size(); ++j) {
      const BlobProto& proto = source_layer.blobs(static_cast<int>(j));
      // Legacy 4-d dimensions (lower-rank blobs padded with ones) match by count. They
      // come straight from the file: refuse negative ones, and products that overflow.
      auto legacy_count_matches = [&] {
        if (proto.has_shape()) return false;
        int64_t count = 1;
        for (int64_t dim : ShapeOfProto(proto)) {
          if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) return false;
        }
        return count == target[j]->count();
      };
      CAFFE_REQUIRE(target[j]->ShapeEquals(proto) || legacy_count_matches())
          << "layer '" << source_layer.name() << "' blob " << j << ": the weights have shape "
          << ShapeToString(ShapeOfProto(proto)) << ", the net expects "
          << ShapeToString(target[j]->shape());
      target[j]->FromProto(proto, false);
    }
  }
}

void Net::CopyTrainedLayersFrom(const string& filename) {
  if (EndsWith(filename, ".h5")) {
    CopyTrainedLayersFromHDF5(filename);
    return;
  }
  NetParameter param;
  const bool text = EndsWith(filename, ".prototxt") || EndsWith(filename, ".txt");
  if (text) {
    ReadProtoFromTextFile(filename, &param);
  } else {
    ReadProtoFromBinaryFile(filename, &param);
  }
  try {
    CopyTrainedLayersFrom(param);
  } catch (const Error& e) {
    ErrorBuilder() << filename << ": " << e.what();
  }
}

void Net::CopyTrainedLayersFromHDF5(const string& filename) {
  const Hdf5File file = Hdf5File::Open(filename);
  CAFFE_REQUIRE(file.Has("data"))
      << filename << ": no group 'data' (BVLC Caffe's HDF5 weights hold data/<layer>/<blob>)";
  const Hdf5Group data = file.OpenGroup("data");
  size_t first_param = 0;  // params_ holds every layer's blobs, layer after layer
  for (size_t i = 0; i < layers_.size(); ++i) {
    const vector<shared_ptr<Blob>>& blobs = layers_[i]->blobs();
    const size_t layer_params = first_param;
    first_param += blobs.size();
    const string& name = layer_names_[i];
    // As with a .caffemodel, a layer the file lacks keeps its values.
    if (!data.Has(name)) continue;
    const Hdf5Group source = data.OpenGroup(name);
    const string one_too_many = std::to_string(blobs.size());
    CAFFE_REQUIRE(!source.Has(one_too_many))
        << filename << ": layer '" << name << "': the weights hold more than " << blobs.size()
        << " blob(s) (dataset 'data/" << name << "/" << one_too_many << "'), the net expects "
        << blobs.size();
    for (size_t j = 0; j < blobs.size(); ++j) {
      CHECK(layer_params + j < params_.size() && params_[layer_params + j] == blobs[j])
          << "params_ out of layer order";
      const string index = std::to_string(j);
      if (!source.Has(index)) {
        // BVLC writes a shared blob's values only under the layer that owns it.
        CAFFE_REQUIRE(param_owners_[layer_params + j] >= 0)
            << filename << ": layer '" << name << "' blob " << j
            << ": the weights have no dataset 'data/" << name << "/" << index
            << "', the net expects " << blobs.size() << " blob(s)";
        continue;
      }
      const vector<int64_t> shape = source.DatasetShape(index);
      CAFFE_REQUIRE(shape == blobs[j]->shape())
          << filename << ": layer '" << name << "' blob " << j << ": the weights have shape "
          << ShapeToString(shape) << ", the net expects " << ShapeToString(blobs[j]->shape());
      source.ReadFloats(index, shape, blobs[j]->mutable_cpu_data());
    }
  }
}

void Net::ToHDF5(const string& filename, bool write_diff) const {
  // Made in memory and written in one atomic step, as the .caffemodel is.
  const Hdf5File file = Hdf5File::CreateInMemory(filename);
  {
    // Every group and dataset is closed before the image is taken.
    const Hdf5Group data = file.OpenOrCreateGroup("data");
    std::optional<Hdf5Group> diff;
    if (write_diff) diff.emplace(file.OpenOrCreateGroup("diff"));
    size_t p = 0;  // params_ holds every layer's blobs, layer after layer
    for (size_t i = 0; i < layers_.size(); ++i) {
      // BVLC makes a group for every layer, with blobs or without.
      const Hdf5Group layer_data = data.OpenOrCreateGroup(layer_names_[i]);
      std::optional<Hdf5Group> layer_diff;
      if (diff) layer_diff.emplace(diff->OpenOrCreateGroup(layer_names_[i]));
      const vector<shared_ptr<Blob>>& blobs = layers_[i]->blobs();
      for (size_t j = 0; j < blobs.size(); ++j, ++p) {
        CHECK(p < params_.size() && params_[p] == blobs[j]) << "params_ out of layer order";
        const Blob& blob = *blobs[j];
        const string index = std::to_string(j);
        // A shared blob's values once, under its owner; its gradient under every user.
        if (param_owners_[p] < 0) layer_data.WriteFloats(index, blob.shape(), blob.cpu_data());
        if (layer_diff) layer_diff->WriteFloats(index, blob.shape(), blob.cpu_diff());
      }
    }
  }
  file.SaveAtomically();
}

void Net::ShareTrainedLayersWith(const Net& other) {
  for (size_t i = 0; i < other.layers().size(); ++i) {
    const string& name = other.layer_names()[i];
    auto it = layer_names_index_.find(name);
    if (it == layer_names_index_.end()) continue;
    auto& target = layers_[it->second]->blobs();
    const auto& source = other.layers()[i]->blobs();
    CAFFE_REQUIRE(target.size() == source.size())
        << "layer '" << name << "': " << source.size() << " weight blob(s) in the train net, "
        << target.size() << " in the test net";
    for (size_t j = 0; j < target.size(); ++j) {
      CAFFE_REQUIRE(target[j]->shape() == source[j]->shape())
          << "layer '" << name << "' blob " << j << ": shape "
          << ShapeToString(source[j]->shape()) << " in the train net, "
          << ShapeToString(target[j]->shape()) << " in the test net";
      target[j]->ShareData(*source[j]);
    }
  }
}

void Net::ToProto(NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (const auto& layer : layers_) layer->ToProto(param->add_layer(), write_diff);
}

shared_ptr<Blob> Net::blob_by_name(const string& name) const {
  auto it = blob_names_index_.find(name);
  CAFFE_REQUIRE(it != blob_names_index_.end()) << source_ << ": the net has no blob '" << name << "'";
  return blobs_[it->second];
}

shared_ptr<Layer> Net::layer_by_name(const string& name) const {
  auto it = layer_names_index_.find(name);
  CAFFE_REQUIRE(it != layer_names_index_.end()) << source_ << ": the net has no layer '" << name << "'";
  return layers_[it->second];
}

}  // namespace caffe
