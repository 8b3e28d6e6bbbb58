// BatchReindex: picks items (entries of the first axis) of a batch by index, BVLC's
// `BatchReindex`. Bottoms: data (N x ...) and indices (shape M, integer values in
// [0, N), as floats); top: M x ... with item i = data item indices[i]. An index may
// repeat or be left out: backward sums the gradients of every top item that read a
// data item into it, and gives the data items no index names 0. The indices take no
// gradient.
#ifndef CAFFE_LAYERS_BATCH_REINDEX_LAYER_HPP_
#define CAFFE_LAYERS_BATCH_REINDEX_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class BatchReindexLayer : public Layer {
 public:
  explicit BatchReindexLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "BatchReindex"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // The indices only address items: they have no gradient.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  // The data item of every top item, as the last Forward read (and checked) them.
  vector<int64_t> source_items_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_BATCH_REINDEX_LAYER_HPP_
