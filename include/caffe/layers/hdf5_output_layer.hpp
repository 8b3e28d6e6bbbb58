// HDF5Output: BVLC's `HDF5Output` (hdf5_output_param file_name). Writes its two
// bottoms to the HDF5 file `file_name` as datasets "data" and "label" (BVLC's names,
// whatever the bottoms are called), float32, the items along the first axis. The file
// is created, or truncated, at setup. Unlike BVLC, which rewrites both datasets with
// each batch, every Forward appends its batch (chunked datasets that grow along axis
// 0), so after n forwards of batch N the file holds all n N items in order; the file
// is flushed after each batch, so a reader sees every batch written so far.
//
// The bottoms must hold the same number of items, and each keeps its item shape (the
// shape after the first axis) from setup on; the batch size may change. No tops; no
// backward (its bottoms get no gradient). Runs on the CPU.
#ifndef CAFFE_LAYERS_HDF5_OUTPUT_LAYER_HPP_
#define CAFFE_LAYERS_HDF5_OUTPUT_LAYER_HPP_

#include <memory>
#include <string>
#include <vector>

#include "caffe/layer.hpp"

namespace caffe {

class Hdf5File;
class Hdf5RowAppender;

class HDF5OutputLayer : public Layer {
 public:
  explicit HDF5OutputLayer(const LayerParameter& param);
  ~HDF5OutputLayer() override;
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "HDF5Output"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 0; }
  // What is written out has no gradient.
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  std::unique_ptr<Hdf5File> file_;
  // "data" for bottom 0, "label" for bottom 1, declared after file_: closed before it.
  vector<std::unique_ptr<Hdf5RowAppender>> datasets_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_HDF5_OUTPUT_LAYER_HPP_
