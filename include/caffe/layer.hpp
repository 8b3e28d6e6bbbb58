// The layer contract: SetUp once (LayerSetUp reads parameters and creates weights),
// Reshape on every pass (tops from bottoms), then Forward and Backward. Layers see
// only their bottoms, tops and weights; they never know about solvers or other ranks.
#ifndef CAFFE_LAYER_HPP_
#define CAFFE_LAYER_HPP_

#include <memory>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/util/host_memory_limit.hpp"

namespace caffe {

class Layer {
 public:
  explicit Layer(const LayerParameter& param);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks blob counts, runs LayerSetUp and Reshape, and sets the loss weights.
  void SetUp(const vector<Blob*>& bottom, const vector<Blob*>& top);

  // Reads parameters and creates (or loads) weight blobs; called once.
  virtual void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {}
  // Shapes the tops (and internal buffers) for the current bottoms.
  virtual void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) = 0;

  // Reshapes, runs the forward pass for the context's mode, and returns the
  // weighted loss this layer contributes.
  float Forward(const vector<Blob*>& bottom, const vector<Blob*>& top);
  // Fills bottom diffs (where propagate_down) and accumulates weight diffs.
  void Backward(const vector<Blob*>& top, const vector<bool>& propagate_down,
                const vector<Blob*>& bottom);

  vector<shared_ptr<Blob>>& blobs() { return blobs_; }
  const LayerParameter& layer_param() const { return layer_param_; }
  const string& name() const { return layer_param_.name(); }
  Phase phase() const { return phase_; }
  virtual void ToProto(LayerParameter* param, bool write_diff = false);

  float loss(int top_index) const {
    return loss_.size() > static_cast<size_t>(top_index) ? loss_[top_index] : 0.f;
  }
  void set_loss(int top_index, float value);

  virtual const char* type() const { return ""; }

  // Blob-count contract, checked in SetUp; -1 means "no constraint".
  virtual int ExactNumBottomBlobs() const { return -1; }
  virtual int MinBottomBlobs() const { return -1; }
  virtual int MaxBottomBlobs() const { return -1; }
  virtual int ExactNumTopBlobs() const { return -1; }
  virtual int MinTopBlobs() const { return -1; }
  virtual int MaxTopBlobs() const { return -1; }
  virtual bool EqualNumBottomTopBlobs() const { return false; }
  // Lets the net create anonymous tops up to the minimum/exact count.
  virtual bool AutoTopBlobs() const { return false; }
  // False for inputs that have no gradient (labels, indices).
  virtual bool AllowForceBackward(int bottom_index) const { return true; }

  bool param_propagate_down(int param_id) const {
    return param_propagate_down_.size() > static_cast<size_t>(param_id)
               ? param_propagate_down_[param_id]
               : false;
  }
  void set_param_propagate_down(int param_id, bool value);
  // True for a parameter blob that Forward accumulates from the data it sees instead
  // of learning it (BatchNorm's running mean and variance). In data-parallel training
  // each rank's copy then describes its own shard, so the solver averages them across
  // ranks before a test pass or a snapshot.
  virtual bool ParamIsDataStatistic(int param_id) const { return false; }
  // A copy of the layer's own output for top[0] from the last CPU Forward, which the
  // layer keeps for its own backward until its next Forward; nullptr when it keeps
  // none. BatchNorm keeps its normalized output so; a Scale running in place on that
  // top reads it instead of saving a second copy of the same values. (With a folded
  // consumer, FoldChannelScaleInto, top[0] itself holds the consumer's output.)
  virtual const float* KeptTopValues() const { return nullptr; }
  // The device counterpart, for a producer whose top 0 after its last GPU Forward is
  // a per-channel (axis 1) normalization of values it keeps until its next Forward:
  // top[0] = (values - mean[c]) * inv_std[c] in channel c, or `values` itself when
  // mean and inv_std are null. An in-place Scale on that top reads these instead of
  // copying its input: on ResNet-50 at batch 64 such copies take about 2.7 GB.
  struct KeptDeviceTop {
    const float* values = nullptr;  // null: nothing kept
    const float* mean = nullptr;
    const float* inv_std = nullptr;
    int64_t channels = 0;
  };
  virtual KeptDeviceTop KeptTopValuesGpu() const { return {}; }
  // The net names, for a bottom, the layer that last wrote it before this one (its
  // top 0), or nullptr; a layer may read that producer's KeptTopValues (or
  // KeptTopValuesGpu) in Forward.
  virtual void set_bottom_producer(int bottom_index, const Layer* producer) {}

  // Folding a per-channel affine map into its producer (Net::FoldChannelScales). A
  // layer that computes y = x * s + b per channel in place on its producer's top
  // (Scale after BatchNorm) hands the producer its factor and bias blobs: in forward
  // the producer writes y itself in the pass that makes x (keeping x for backward,
  // KeptTopValues), and the consumer does nothing; in backward the consumer skips its
  // own pass over the input gradient, handing the producer the per-channel sums of dy
  // and dy * x that it computes for its own parameters anyway, and the producer
  // applies the factor in the one pass it makes over its own input gradient. Between
  // the two layers' backward the blob's diff holds the consumer's dy, unscaled.
  //
  // Consumer side: records `producer` and returns true when this layer can fold into
  // it (the net has checked that this layer runs in place on the producer's top 0).
  virtual bool FoldChannelScaleInto(Layer* producer) { return false; }
  // Producer side: whether a consumer with these factors (and bias, or nullptr) may
  // fold into this layer; on true, whenever the layer keeps a copy of its top
  // (KeptTopValues) it writes x * scale + bias to the top instead.
  virtual bool AcceptChannelScaleFold(const Blob* scale, const Blob* bias) { return false; }
  // Producer side, from the consumer's Backward: the factor of each channel and the
  // sums over batch and space, sums[2c] of dy and sums[2c + 1] of dy * x, for the
  // producer's next Backward.
  virtual void ReceiveChannelScaleFold(const float* scale, std::vector<double> sums) {}

  // Channel-blocked layouts (Blob::channel_block, planned by
  // Net::PlanChannelBlockedLayouts for CPU nets):
  // - kPlainOnly: the layer reads and writes Caffe's plain layout only (the default).
  // - kFollowsItsBlobs: its CPU passes give the same values, bit for bit, whatever the
  //   layout, provided that all its bottoms and tops share it (elementwise layers, and
  //   per-channel ones written for both layouts). The plan gives all of them one layout.
  // - kConvertsPerBlob: it reads and writes each bottom and top in the layout that blob
  //   has (oneDNN's convolution), and PreferredChannelBlock says which one costs it no
  //   reorder.
  enum class ChannelLayoutRole { kPlainOnly, kFollowsItsBlobs, kConvertsPerBlob };
  virtual ChannelLayoutRole channel_layout_role() const { return ChannelLayoutRole::kPlainOnly; }
  // For kConvertsPerBlob, after Reshape: the channel block the layer computes bottom
  // `index` (or top `index`) in, 0 when it is none of the supported ones.
  virtual int PreferredChannelBlock(bool top, int index) const { return 0; }

  // The context is shared with the owning net; a layer made alone gets its own.
  void set_context(shared_ptr<Context> context) { context_ = std::move(context); }
  Context& context() const { return *context_; }
  // For layers built inside another layer (SoftmaxWithLoss's Softmax): they must run
  // in the same mode and draw from the same random stream as their owner.
  const shared_ptr<Context>& shared_context() const { return context_; }

 protected:
  virtual void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) = 0;
  virtual void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom) = 0;
  // Layers without a device path run on the host; the data moves lazily.
  virtual void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top);
  virtual void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                            const vector<Blob*>& bottom);

  // Starts a user-facing error naming this layer: Fail() << "what was wrong".
  ErrorBuilder Fail() const;
  // Sizes a host scratch vector (a pooling index, an eltwise argmax) to `count` entries.
  // Reshape sizes these while the net is built, before any blob allocates, so a shape
  // too large for the host is reported here as this layer's error naming `what`.
  template <typename T>
  void ResizeScratch(vector<T>* scratch, int64_t count, const char* what) const;
  // The prototxt name of bottom/top i, or "#i" for layers built without names.
  string bottom_name(int i) const;
  string top_name(int i) const;

  LayerParameter layer_param_;
  Phase phase_;
  vector<shared_ptr<Blob>> blobs_;
  vector<bool> param_propagate_down_;
  vector<float> loss_;

 private:
  void CheckBlobCounts(const vector<Blob*>& bottom, const vector<Blob*>& top) const;
  void SetLossWeights(const vector<Blob*>& top);

  shared_ptr<Context> context_;
};

// CAFFE_REQUIRE for code inside a layer: the message is prefixed with the layer.
#define LAYER_REQUIRE(condition) \
  if (condition) {               \
  } else                         \
    this->Fail()

template <typename T>
void Layer::ResizeScratch(vector<T>* scratch, int64_t count, const char* what) const {
  LAYER_REQUIRE(HostAllocationFits(count, sizeof(T)))
      << what << " needs " << count << " entries of " << sizeof(T)
      << " bytes, more than the host memory (or its limit) allows";
  scratch->resize(static_cast<size_t>(count));
}

}  // namespace caffe

#endif  // CAFFE_LAYER_HPP_
