// HDF5Data: BVLC's `HDF5Data` (hdf5_data_param source, batch_size, shuffle). `source`
// is a text file naming one HDF5 file per line (a path as written: relative paths are
// relative to the working directory; blank lines are skipped). Each file holds one
// dataset per top, named like the top, whose first axis counts the file's items: every
// top's dataset in a file has the same number of items, and each top's items have one
// shape in every file. Any floating-point or integer type on disk is read as float.
// Each Forward emits batch_size items, top t being batch_size x (the items' shape of
// dataset t), taking the items of the first file in order, then the next file's, and
// after the last file the first one's again (a batch may span files and the wrap).
//
// shuffle: true visits the files in a random order and each file's items in a random
// order, both drawn anew each time they start over (the file order once all files are
// read, a file's item order whenever the file is read), from a stream seeded at setup
// from the context's, so a seed reproduces the order.
//
// In a data-parallel run (TRAIN phase, world_size N > 1) the items are numbered
// across the files in list order (file 0's items 0 .. n0 - 1, file 1's next, ...) and
// rank r reads item i exactly when i mod N == r, as the Data layer shards records, so
// the ranks' shares are disjoint and together cover every item whatever the shuffle.
// A file that holds none of a rank's items is skipped by that rank. A test pass reads
// every item (rank 0 tests for the job).
//
// The files are checked at setup (present, HDF5, a dataset per top, consistent item
// counts and shapes); then one file's datasets at a time are held in memory, as in
// BVLC. No backward, no transform_param (the data is used as stored); runs on the CPU.
#ifndef CAFFE_LAYERS_HDF5_DATA_LAYER_HPP_
#define CAFFE_LAYERS_HDF5_DATA_LAYER_HPP_

#include <random>
#include <string>
#include <vector>

#include "caffe/layer.hpp"

namespace caffe {

class HDF5DataLayer : public Layer {
 public:
  explicit HDF5DataLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  // The tops' shapes are fixed at setup; this restores them should a caller have
  // reshaped a top.
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "HDF5Data"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override {}

 private:
  // One file named by the source list.
  struct SourceFile {
    string path;
    int line = 0;            // 1-based line in the list, for messages
    int64_t items = 0;       // what its datasets' first axis counts
    int64_t first_item = 0;  // the number of its first item across the list
  };
  void ReadSourceList();
  // Opens every file and checks its datasets against the tops and the first file.
  void CheckFiles(const vector<Blob*>& top);
  // The first of `file`'s items (rows) this rank reads; it reads every world_size_-th
  // row from there on. `file.items` or more when it reads none.
  int64_t FirstOwnRow(const SourceFile& file) const;
  // Reads files_[file]'s datasets into values_, then orders its items (OrderItems).
  void LoadFile(size_t file);
  // item_order_: the loaded file's items for this rank, shuffled when asked to.
  void OrderItems();
  // Moves on to the next file in file_order_, reshuffling that order when it starts over.
  void NextFile();
  // "HDF5 file list '<source>' line <n>: ", the start of an error about files_[file].
  string WhereListed(size_t file) const;

  string source_;
  int64_t batch_size_ = 0;
  bool shuffle_ = false;
  int rank_ = 0;
  int world_size_ = 1;
  vector<SourceFile> files_;
  vector<vector<int64_t>> item_shapes_;  // per top: the shape of one item
  vector<int64_t> item_sizes_;           // per top: the floats in one item
  vector<vector<int64_t>> top_shapes_;   // per top: batch_size x item shape

  // The files with items for this rank, in the order this epoch reads them, and the
  // position in it of the loaded file.
  vector<size_t> file_order_;
  size_t order_position_ = 0;
  size_t loaded_file_ = 0;
  vector<vector<float>> values_;  // per top: the loaded file's dataset, every item
  vector<int64_t> item_order_;    // the loaded file's items for this rank, in read order
  size_t next_item_ = 0;          // position in item_order_ of the next item to emit
  // The shuffles' stream, seeded once at setup from the context's.
  std::mt19937_64 rng_;
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_HDF5_DATA_LAYER_HPP_
