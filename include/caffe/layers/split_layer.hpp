// Fans one blob out to several consumers (the net inserts it where one top feeds
// several bottoms): every top shares the bottom's data, and the consumers'
// gradients are summed into the bottom's diff.
#ifndef CAFFE_LAYERS_SPLIT_LAYER_HPP_
#define CAFFE_LAYERS_SPLIT_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class SplitLayer : public Layer {
 public:
  explicit SplitLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Split"; }
  // Elementwise: any layout its bottoms and tops share.
  ChannelLayoutRole channel_layout_role() const override {
    return ChannelLayoutRole::kFollowsItsBlobs;
  }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }

 protected:
  // The tops already alias the bottom's data (set in Reshape).
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override {}
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_SPLIT_LAYER_HPP_
