// Embedding lookup: each bottom value is an integer index in [0, input_dim) stored
// as a float; the top appends an axis of num_output holding row `index` of the
// input_dim x num_output weight matrix (plus the bias). Indices get no gradient.
#ifndef CAFFE_LAYERS_EMBED_LAYER_HPP_
#define CAFFE_LAYERS_EMBED_LAYER_HPP_

#include <memory>

#include "caffe/layer.hpp"

namespace caffe {

class EmbedLayer : public Layer {
 public:
  explicit EmbedLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Embed"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // Accumulates weight gradients; the index input, being piecewise constant in its
  // effect, gets a zero gradient when one is asked for.
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

  // Validates bottom element i as an index; throws naming the element otherwise.
  int64_t IndexAt(const float* indices, int64_t i) const;

  int64_t input_dim_ = 0;   // K: number of rows
  int64_t num_output_ = 0;  // N: width of a row
  bool bias_term_ = true;
#ifdef USE_CUDA
  // Backward on the device: which bottom positions hit each used weight row, built on
  // the host from the indices (see embed_layer.cu). Grown, never shrunk.
  std::unique_ptr<SyncedMemory> row_positions_;
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_EMBED_LAYER_HPP_
