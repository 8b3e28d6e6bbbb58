// An N-d float32 array with a value (`data`) and a gradient (`diff`) of the same
// shape, each in a SyncedMemory. Reshape reallocates only when the blob grows.
#ifndef CAFFE_BLOB_HPP_
#define CAFFE_BLOB_HPP_

#include <memory>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/syncedmem.hpp"

namespace caffe {

constexpr int kMaxBlobAxes = 32;

class Blob {
 public:
  Blob() = default;
  explicit Blob(const vector<int64_t>& shape) { Reshape(shape); }
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  void Reshape(const vector<int64_t>& shape);
  void Reshape(const BlobShape& shape);
  void Reshape(int64_t num, int64_t channels, int64_t height, int64_t width);
  void ReshapeLike(const Blob& other) { Reshape(other.shape()); }

  const vector<int64_t>& shape() const { return shape_; }
  // Axis may be negative (counted from the end).
  int64_t shape(int axis) const { return shape_[CanonicalAxisIndex(axis)]; }
  int num_axes() const { return static_cast<int>(shape_.size()); }
  int64_t count() const { return count_; }
  // Product of dimensions [start, end).
  int64_t count(int start, int end) const;
  int64_t count(int start) const { return count(start, num_axes()); }
  int CanonicalAxisIndex(int axis) const;
  string shape_string() const;

  // Legacy accessors for 4-d code: missing trailing axes read as 1.
  int64_t num() const { return LegacyShape(0); }
  int64_t channels() const { return LegacyShape(1); }
  int64_t height() const { return LegacyShape(2); }
  int64_t width() const { return LegacyShape(3); }
  int64_t LegacyShape(int index) const;

  int64_t offset(int64_t n, int64_t c = 0, int64_t h = 0, int64_t w = 0) const;
  int64_t offset(const vector<int64_t>& indices) const;

  float data_at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return cpu_data()[offset(n, c, h, w)];
  }
  float diff_at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return cpu_diff()[offset(n, c, h, w)];
  }

  const float* cpu_data() const;
  const float* cpu_diff() const;
  float* mutable_cpu_data();
  float* mutable_cpu_diff();
  const float* gpu_data() const;
  const float* gpu_diff() const;
  float* mutable_gpu_data();
  float* mutable_gpu_diff();
  // Uses external host memory for data (no copy); the caller keeps it alive.
  void set_cpu_data(float* data);

  const shared_ptr<SyncedMemory>& data() const { return data_; }
  const shared_ptr<SyncedMemory>& diff() const { return diff_; }

  // data -= diff, the plain SGD step; solvers fold lr and momentum into diff first.
  void Update();
  float asum_data() const;
  float asum_diff() const;
  float sumsq_data() const;
  float sumsq_diff() const;
  void scale_data(float factor);
  void scale_diff(float factor);

  // Makes this blob use other's data (or diff) memory. Shapes must have equal counts.
  void ShareData(const Blob& other);
  void ShareDiff(const Blob& other);
  // Makes the diff (or data) live in `memory`, which others may use too (Net's memory
  // plans); it must hold capacity() floats. A later Reshape past capacity() gives the blob its
  // own memory again.
  void SetDiffMemory(shared_ptr<SyncedMemory> memory);
  void SetDataMemory(shared_ptr<SyncedMemory> memory);
  // Elements the blob's own buffers hold: Reshape up to it reuses them.
  int64_t capacity() const { return capacity_; }

  // How data and diff are laid out. 0 (the default) is Caffe's row-major N x C x ...;
  // b > 0 is the channel-blocked layout oneDNN's convolutions compute in (its aBcd8b /
  // aBcd16b): channels in groups of b, each group's spatial positions in turn, and the
  // b channels of a position side by side. Element (n, c, s) of an N x C x S blob is
  // then at ((n * C / b + c / b) * S + s) * b + c % b, and C is a multiple of b. Only a
  // Net's layout plan (Net::PlanChannelBlockedLayouts) sets it, on blobs whose every
  // reader and writer understands it; indexing helpers such as data_at assume 0.
  int channel_block() const { return channel_block_; }
  void set_channel_block(int block) { channel_block_ = block; }

  // Copies values (or gradients) from source; with reshape=false the shapes must match.
  void CopyFrom(const Blob& source, bool copy_diff = false, bool reshape = false);

  bool ShapeEquals(const BlobProto& proto) const;
  // Throws caffe::Error when reshape is false and the proto's shape differs.
  void FromProto(const BlobProto& proto, bool reshape = true);
  void ToProto(BlobProto* proto, bool write_diff = false) const;

 private:
  shared_ptr<SyncedMemory> data_;
  shared_ptr<SyncedMemory> diff_;
  vector<int64_t> shape_;
  int64_t count_ = 0;
  int64_t capacity_ = 0;
  int channel_block_ = 0;
};

// "2x3x4" style text for error messages.
string ShapeToString(const vector<int64_t>& shape);
vector<int64_t> ShapeFromProto(const BlobShape& proto);
// A BlobProto's shape, taking the legacy num/channels/height/width form into account.
vector<int64_t> ShapeOfProto(const BlobProto& proto);

}  // namespace caffe

#endif  // CAFFE_BLOB_HPP_
