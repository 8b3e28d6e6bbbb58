// Filter: keeps the items (entries of the first axis) that a selector picks, BVLC's
// `Filter`. Bottoms: K data blobs, then the selector, of shape N or N x 1 x ... (one
// value per item); every data bottom has N items. Tops: the K data blobs with only the
// items whose selector value is nonzero, in their order (possibly none: a first axis
// of 0). Backward copies each kept item's gradient back to its place and gives the
// others 0; the selector takes no gradient.
//
// The selection is read in Reshape, so the tops' first axis follows the selector on
// every pass. The first Reshape (at SetUp) keeps every item instead, as BVLC's does:
// while a net is built the selector holds no values yet, and sizing the tops for the
// whole batch lets the layers after this one set up for, and allocate, the largest
// size they will see.
#ifndef CAFFE_LAYERS_FILTER_LAYER_HPP_
#define CAFFE_LAYERS_FILTER_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class FilterLayer : public Layer {
 public:
  explicit FilterLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Filter"; }
  int MinBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  // The selector (the last bottom) only chooses items: it has no gradient.
  bool AllowForceBackward(int bottom_index) const override {
    return bottom_index != layer_param_.bottom_size() - 1;
  }

  // The items the last Reshape kept, in order (for tests).
  const vector<int64_t>& kept_items() const { return kept_items_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  vector<int64_t> kept_items_;
  bool first_reshape_ = true;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_FILTER_LAYER_HPP_
