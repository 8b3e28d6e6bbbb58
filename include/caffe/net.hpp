// A directed acyclic graph of layers built from a NetParameter: layers are filtered
// by the net state (phase, level, stages), Split layers are inserted where one top
// feeds several bottoms, weights are shared by ParamSpec name, and layers that do not
// lead to a loss skip their backward pass.
#ifndef CAFFE_NET_HPP_
#define CAFFE_NET_HPP_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/layer.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

class Net {
 public:
  // `param.state()` selects phase, level and stages. `source` names the file the
  // parameters came from, for error messages.
  Net(const NetParameter& param, shared_ptr<Context> context, const string& source = "");
  // Reads (and upgrades) a prototxt; the given state overrides the file's.
  Net(const string& filename, Phase phase, shared_ptr<Context> context, int level = 0,
      const vector<string>& stages = {});

  // Runs every layer; returns the output blobs and (optionally) the total loss.
  const vector<Blob*>& Forward(float* loss = nullptr);
  float ForwardFromTo(int start, int end);
  void Backward();
  void BackwardFromTo(int start, int end);
  float ForwardBackward();
  // Called with each layer's index as backward passes it (layers that skip backward
  // included), so that a gradient exchange can start on gradients that are final
  // while earlier layers still compute. An empty function turns it off.
  void set_backward_observer(std::function<void(int layer)> observer) {
    backward_observer_ = std::move(observer);
  }
  // Re-propagates shapes after an input blob was reshaped (and re-plans the shared
  // activation diffs, when ShareActivationDiffs turned them on).
  void Reshape();

  // What ShareActivationDiffs or ShareActivationData did.
  struct ActivationSharing {
    int blobs = 0;    // activation blobs whose memory is a shared buffer
    int buffers = 0;  // the buffers they use
    size_t bytes_before = 0;  // those blobs' memory, one buffer each
    size_t bytes_after = 0;   // the shared buffers' memory
    string skipped;           // why nothing is shared (empty when the plan applies)
  };
  // The memory plan for activation gradients: blobs whose diffs are in use at
  // disjoint stretches of the backward pass share one buffer, so a full
  // Forward+Backward needs about the largest few diffs' memory, not all of them. Each
  // layer overwrites the bottom diffs it writes (the project's convention), so what a
  // buffer held before does not leak into a result. Afterwards a blob's diff is
  // meaningful only while backward uses it: read it after Backward only for blobs in
  // `keep`, loss blobs, the net's inputs and outputs and blobs no backward writes,
  // which keep their own memory. Nothing is shared under force_backward or
  // debug_info (users of those read every diff). `caffe train` and `caffe time` call
  // it; a Net built in code or from Python keeps every diff unless it is called.
  ActivationSharing ShareActivationDiffs(const std::set<string>& keep = {});
  // The same for the values of a net that only runs forward (a test or deploy net):
  // a blob's data is in use from the layer that writes it to the last layer that
  // reads it, and blobs used at disjoint stretches of the forward pass share memory.
  // After Forward only the outputs, inputs, the data layers' tops and blobs in `keep`
  // hold their values, and Backward is an error (it would read overwritten values).
  // Nothing is shared under debug_info. `caffe train` calls it for the test nets and
  // `caffe test` for its net.
  ActivationSharing ShareActivationData(const std::set<string>& keep = {});
  // Folds each per-channel Scale running in place after a BatchNorm into it
  // (Layer::FoldChannelScaleInto): in training forward the BatchNorm writes the
  // Scale's output itself, and in backward the Scale no longer makes its own pass over
  // the input gradient; the BatchNorm applies the factors in its pass. Fewer passes
  // over the activations, the same result up to float rounding. Afterwards the diff of such a
  // blob between the two layers' backward holds the Scale's dy, unscaled, and running
  // only part of backward (BackwardFromTo) through a folded pair is wrong. Nothing is
  // folded under force_backward or debug_info. Returns the number of folded pairs;
  // call it once. `caffe train` and `caffe time` call it with the memory plan.
  int FoldChannelScales();

  // The layout plan for a CPU net's activations: oneDNN's convolutions compute in a
  // channel-blocked layout (Blob::channel_block), and a plain blob between two of them
  // costs a reorder into that layout and one back, each way through the step (about
  // a sixth of ResNet-20's step). The plan finds the regions of blobs that layers
  // which understand the blocked layout join (Layer::kFollowsItsBlobs: ReLU, Eltwise,
  // Split, BatchNorm, per-channel Scale) and whose edges are oneDNN convolutions
  // (kConvertsPerBlob) that all prefer one block, and keeps those blobs in it. A region
  // stays plain if any of its blobs is read or written by another layer, is not
  // N x C x H x W with C a multiple of the block, or is an input, an output, a loss
  // blob or in `keep`. Values and gradients are bit for bit those of the plain net.
  // Afterwards a blob in a region holds its values in the blocked layout: read only
  // the blobs left plain (`keep` makes one so). Nothing is planned for a GPU net or
  // under force_backward or debug_info. `caffe train` (train and test nets), `caffe
  // test` and `caffe time` call it with the memory plan.
  struct ChannelLayoutPlan {
    int blobs = 0;      // blobs given a blocked layout
    int regions = 0;    // the regions they form
    int block = 0;      // the channel block of the last region planned
    string skipped;     // why nothing was planned (empty when the plan ran)
  };
  ChannelLayoutPlan PlanChannelBlockedLayouts(const std::set<string>& keep = {});

  void ClearParamDiffs();
  // data -= diff for every parameter this net owns.
  void Update();

  // Loads weights by layer name. Layers the source lacks keep their values; layers
  // present in both must match in blob count and shapes (else caffe::Error).
  void CopyTrainedLayersFrom(const NetParameter& param);
  // By the name's ending, as BVLC: .h5 is HDF5 (CopyTrainedLayersFromHDF5),
  // .prototxt/.txt text format, anything else a binary .caffemodel.
  void CopyTrainedLayersFrom(const string& filename);
  // Weights in BVLC's HDF5 layout (ToHDF5), by layer name as CopyTrainedLayersFrom. A
  // blob a layer shares with an earlier one (param { name }) may be absent, as BVLC
  // writes only the owner's; any other blob the net expects must be there.
  void CopyTrainedLayersFromHDF5(const string& filename);
  // Makes this net use another net's weights (test nets share the train net's).
  void ShareTrainedLayersWith(const Net& other);
  void ToProto(NetParameter* param, bool write_diff = false) const;
  // Writes the weights in BVLC Caffe's HDF5 layout: a group "data" holding a group per
  // layer (every layer, in net order; a name with '/' nests groups), which holds blob i
  // as float32 dataset "i" with the blob's shape; a blob shared with an earlier layer
  // is written only under its owner. With write_diff, a group "diff" likewise holds
  // every blob's gradient. Atomic, as every file the library writes.
  void ToHDF5(const string& filename, bool write_diff = false) const;

  const string& name() const { return name_; }
  Phase phase() const { return phase_; }
  const vector<string>& layer_names() const { return layer_names_; }
  const vector<string>& blob_names() const { return blob_names_; }
  const vector<shared_ptr<Blob>>& blobs() const { return blobs_; }
  const vector<shared_ptr<Layer>>& layers() const { return layers_; }
  const vector<vector<Blob*>>& bottom_vecs() const { return bottom_vecs_; }
  const vector<vector<Blob*>>& top_vecs() const { return top_vecs_; }
  const vector<int>& top_ids(int layer) const { return top_id_vecs_[layer]; }
  const vector<int>& bottom_ids(int layer) const { return bottom_id_vecs_[layer]; }
  const vector<vector<bool>>& bottom_need_backward() const { return bottom_need_backward_; }
  const vector<bool>& layer_need_backward() const { return layer_need_backward_; }
  const vector<float>& blob_loss_weights() const { return blob_loss_weights_; }

  // Every parameter blob, shared ones included, in layer order.
  const vector<shared_ptr<Blob>>& params() const { return params_; }
  // The blobs the solver updates: one per owner of shared weights.
  const vector<Blob*>& learnable_params() const { return learnable_params_; }
  const vector<float>& params_lr() const { return params_lr_; }
  const vector<float>& params_weight_decay() const { return params_weight_decay_; }
  // For each learnable param: the name of its layer and index, "conv1[0]".
  const vector<string>& learnable_param_names() const { return learnable_param_names_; }
  // For each learnable param: the layer after whose backward its gradient is final,
  // the lowest-numbered layer that adds into it (backward runs from the last layer
  // down; shared weights collect from every user).
  vector<int> learnable_param_ready_layers() const;
  // For each learnable param: whether backward ever writes its diff, that is, some
  // use of it has a nonzero lr_mult in a layer that runs backward. The others keep a
  // zero diff: lr_mult 0 everywhere, BatchNorm's statistics, layers without backward.
  vector<bool> learnable_param_receives_gradient() const;
  // For each learnable param: whether its owner layer accumulates it from the data
  // (Layer::ParamIsDataStatistic), so that ranks hold different values.
  vector<bool> learnable_param_is_data_statistic() const;
  // -1 for an owner, else the index (into params()) of the blob it shares.
  const vector<int>& param_owners() const { return param_owners_; }
  // The layer each entry of params() belongs to.
  const vector<int>& param_layer_indices() const { return param_layer_indices_; }

  const vector<Blob*>& input_blobs() const { return net_input_blobs_; }
  const vector<Blob*>& output_blobs() const { return net_output_blobs_; }
  const vector<int>& output_blob_indices() const { return net_output_blob_indices_; }

  bool has_blob(const string& name) const { return blob_names_index_.count(name) > 0; }
  // Throws caffe::Error naming the net when the blob or layer is unknown.
  shared_ptr<Blob> blob_by_name(const string& name) const;
  bool has_layer(const string& name) const { return layer_names_index_.count(name) > 0; }
  shared_ptr<Layer> layer_by_name(const string& name) const;

  Context& context() const { return *context_; }
  const shared_ptr<Context>& shared_context() const { return context_; }

  // Keeps the layers whose include/exclude rules match param.state().
  static void FilterNet(const NetParameter& param, NetParameter* filtered);
  static bool StateMeetsRule(const NetState& state, const NetStateRule& rule);

 private:
  // Building a net, in its named steps: Init runs them in this order.
  void Init(const NetParameter& param);
  // 1. The layers the state selects, with Split layers where a blob has several readers.
  NetParameter FilterAndSplit(const NetParameter& param) const;
  // 2. Creates layer `layer_id`, connects its bottoms and tops and sets it up; returns
  // whether a bottom needs backward.
  bool WireLayer(NetParameter& param, int layer_id, std::set<string>* available_blobs,
                 std::map<string, int>* blob_name_to_idx);
  // 3. Registers the layer's parameter blobs (sharing, rates); returns whether one
  // learns.
  bool AppendLayerParams(const NetParameter& param, int layer_id);
  // 4. Which layers and bottoms need backward: those that lead to a loss, and every
  // one that can under force_backward.
  void AnalyzeBackward(const NetParameter& param);
  // 5. Tells each layer which layer last wrote each of its bottoms (Layer::
  // set_bottom_producer), where that blob's values live in no other blob.
  void ConnectBottomProducers();
  void AppendTop(const NetParameter& param, int layer_id, int top_id,
                 std::set<string>* available_blobs, std::map<string, int>* blob_name_to_idx);
  int AppendBottom(const NetParameter& param, int layer_id, int bottom_id,
                   std::set<string>* available_blobs, std::map<string, int>* blob_name_to_idx);
  void AppendParam(const NetParameter& param, int layer_id, int param_id);
  ErrorBuilder Fail() const;

  string name_;
  string source_;
  Phase phase_ = TEST;
  shared_ptr<Context> context_;

  vector<shared_ptr<Layer>> layers_;
  vector<string> layer_names_;
  std::map<string, int> layer_names_index_;
  vector<bool> layer_need_backward_;

  vector<shared_ptr<Blob>> blobs_;
  vector<string> blob_names_;
  std::map<string, int> blob_names_index_;
  vector<bool> blob_need_backward_;
  vector<float> blob_loss_weights_;

  vector<vector<Blob*>> bottom_vecs_;
  // Per bottom, the layer that last wrote it (ConnectBottomProducers), or nullptr.
  vector<vector<Layer*>> bottom_producers_;
  vector<vector<int>> bottom_id_vecs_;
  vector<vector<bool>> bottom_need_backward_;
  vector<vector<Blob*>> top_vecs_;
  vector<vector<int>> top_id_vecs_;

  vector<shared_ptr<Blob>> params_;
  vector<int> param_owners_;
  vector<int> param_layer_indices_;
  vector<std::pair<int, int>> param_layer_positions_;
  std::map<string, int> param_names_index_;
  vector<Blob*> learnable_params_;
  vector<int> learnable_param_ids_;
  vector<string> learnable_param_names_;
  vector<float> params_lr_;
  vector<float> params_weight_decay_;
  std::function<void(int)> backward_observer_;
  bool force_backward_ = false;
  bool debug_info_ = false;
  // The memory plans' state: on or off, the blobs they must leave alone, and the
  // blobs that alias one diff or one data buffer (Flatten, Reshape and one-input
  // Concat/Slice share their bottom's, Split's tops share its bottom's data), found
  // once before any sharing.
  bool share_diffs_ = false, share_data_ = false;
  std::set<string> diff_keep_, data_keep_;
  vector<vector<int>> diff_alias_groups_, data_alias_groups_;
  // Groups the blobs by the buffer `memory_of` returns for them.
  vector<vector<int>> AliasGroups(
      const std::function<const SyncedMemory*(const Blob&)>& memory_of) const;
  // Plans shared buffers for the alias groups that are not left alone, from the
  // steps at which each blob is used, and hands them out with `assign`.
  ActivationSharing ShareBuffers(const vector<vector<int>>& groups, const vector<int>& first,
                                 const vector<int>& last, const vector<bool>& eligible,
                                 const std::function<size_t(const Blob&)>& bytes_of,
                                 const std::function<void(Blob*, shared_ptr<SyncedMemory>)>& assign);
  // Blob ids a memory or layout plan leaves as they are: `keep`, inputs, outputs and
  // loss blobs, which callers read. `purpose` ends the error for an unknown name in
  // `keep` ("to keep in the plain layout").
  std::set<int> BlobsLeftAlone(const std::set<string>& keep, const char* purpose) const;
  // The index into learnable_params() of params()[p] (its owner's), or -1.
  int LearnableIndexOf(size_t p) const;

  vector<Blob*> net_input_blobs_;
  vector<Blob*> net_output_blobs_;
  vector<int> net_output_blob_indices_;
};

}  // namespace caffe

#endif  // CAFFE_NET_HPP_
