// Repeats the bottom `tiles` times along `axis`: the whole block of axes from `axis`
// on is copied, so a 2 x 3 bottom tiled twice on axis 1 reads row by row
// x0 x1 x2 x0 x1 x2.
#ifndef CAFFE_LAYERS_TILE_LAYER_HPP_
#define CAFFE_LAYERS_TILE_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class TileLayer : public Layer {
 public:
  explicit TileLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Tile"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  int64_t outer_ = 0;  // product of the axes before `axis`
  int64_t inner_ = 0;  // elements in one copied block (axes from `axis` on)
  int64_t tiles_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_TILE_LAYER_HPP_
