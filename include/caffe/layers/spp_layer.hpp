// SPP: spatial pyramid pooling, BVLC's `SPP` (spp_param pyramid_height, pool, engine).
// Level l = 0 .. pyramid_height - 1 pools every channel of the N x C x H x W bottom
// into 2^l x 2^l bins: a Pooling layer with kernel k = ceil(H / 2^l), stride k and pad
// (k 2^l - H + 1) / 2 (the same along W), which gives exactly 2^l bins per side. Each
// level is flattened to N x (C 4^l) and the levels are joined along axis 1, level 0
// first: top N x (C (1 + 4 + ... + 4^(pyramid_height - 1))). With pyramid_height 1 the
// top is the single level's N x C x 1 x 1, unflattened, as in BVLC.
//
// Built, as BVLC's is, from the Pooling, Split, Flatten and Concat layers, made inside
// this one with its mode and engine choice (so Pooling runs on the device in a GPU
// net); they are rebuilt when the bottom's H or W changes. Split fans the bottom out
// to the levels so that backward sums their gradients. The pad must stay below the
// kernel, as Pooling requires: a bottom too small for the pyramid (H = 5 for 4 bins,
// say) is refused, naming the level. STOCHASTIC pooling takes no padding, so with it
// H and W must be multiples of 2^(pyramid_height - 1).
#ifndef CAFFE_LAYERS_SPP_LAYER_HPP_
#define CAFFE_LAYERS_SPP_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class SPPLayer : public Layer {
 public:
  explicit SPPLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "SPP"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  // The layers inside pick their own path from the shared context's mode.
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {
    Forward_cpu(bottom, top);
  }
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {
    Backward_cpu(top, propagate_down, bottom);
  }
#endif

 private:
  // The pooling window of one level along one axis.
  struct LevelGeometry {
    int64_t kernel = 0;  // also the stride
    int64_t pad = 0;
  };
  // Level `level`'s window along the bottom's axis `axis_name` of `size` inputs;
  // refuses a level that does not fit it.
  LevelGeometry GeometryOf(int level, int64_t size, const char* axis_name,
                           const Blob& bottom) const;
  // Checks that every level fits the bottom, then makes and sets up the layers inside.
  void BuildPieces(const vector<Blob*>& bottom, const vector<Blob*>& top);
  // A layer of `type` named `<this layer's name>/<suffix>`, configured by `param`'s
  // type-specific fields, in this layer's mode and phase.
  shared_ptr<Layer> MakePiece(LayerParameter param, const string& type, const string& suffix) const;
  // What level l's Pooling layer reads and writes: a view of the bottom and pooled_[l],
  // or, with one level, the bottom and the top themselves.
  vector<Blob*> PoolingBottom(int level, const vector<Blob*>& bottom) const;
  vector<Blob*> PoolingTop(int level, const vector<Blob*>& top) const;

  int pyramid_height_ = 0;
  // The bottom's H and W the pieces were built for (-1: none yet).
  int64_t built_height_ = -1, built_width_ = -1;

  // pyramid_height_ > 1: bottom -> Split -> Pooling[l] -> Flatten[l] -> Concat -> top.
  // pyramid_height_ == 1: bottom -> Pooling[0] -> top; the other pieces stay empty.
  shared_ptr<Layer> split_layer_;
  vector<shared_ptr<Blob>> split_tops_;  // level l's view of the bottom (own diff)
  vector<shared_ptr<Layer>> pooling_layers_;
  vector<shared_ptr<Blob>> pooled_;  // N x C x 2^l x 2^l
  vector<shared_ptr<Layer>> flatten_layers_;
  vector<shared_ptr<Blob>> flattened_;  // N x (C 4^l), views of pooled_
  shared_ptr<Layer> concat_layer_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SPP_LAYER_HPP_
