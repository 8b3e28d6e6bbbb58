// HDF5 files through the HDF5 C library: what the HDF5Data and HDF5Output layers read
// and write, and weights in BVLC Caffe's HDF5 layout (Net::ToHDF5). Values are float32
// in memory. Datasets of any floating-point or integer type on disk are converted to
// float32 when read (h5py writes float64 and int64 unless told otherwise); datasets are
// written as float32. Every failure throws caffe::Error in one line naming the file and
// the object ("w.h5: dataset 'data/ip/0': ..."). The library would also print its own
// error stack to stderr at each failed call; that printing is turned off.
//
// The library is Debian's thread-safe build, but a file and what was opened from it
// belong to the thread that opened it.
#ifndef CAFFE_UTIL_HDF5_HPP_
#define CAFFE_UTIL_HDF5_HPP_

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace caffe {

// One identifier of the library (file, group, dataset, dataspace, datatype, property
// list), closed when this goes out of scope.
class Hdf5Id {
 public:
  Hdf5Id() = default;
  explicit Hdf5Id(hid_t id) : id_(id) {}
  Hdf5Id(Hdf5Id&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  Hdf5Id& operator=(Hdf5Id&& other) noexcept;
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  ~Hdf5Id() { Close(); }

  hid_t get() const { return id_; }
  // False when the call that made it failed (the library returns a negative id).
  bool valid() const { return id_ >= 0; }
  void Close();

 private:
  hid_t id_ = -1;
};

// A group of an open file (the file itself is its root group): where datasets and
// groups are read and made. Names may be paths ("data/conv1"); a layer named
// "inception/1x1" is so a group "1x1" inside a group "inception".
class Hdf5Group {
 public:
  Hdf5Group(Hdf5Group&&) = default;
  Hdf5Group& operator=(Hdf5Group&&) = default;

  hid_t id() const { return id_.get(); }
  // The file's name as it was given, and this group's path in it ("" for the root).
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  // "<file>: <kind> '<path of member name>'", the start of a message about a member.
  std::string Describe(const std::string& kind, const std::string& name) const;

  // Whether the member `name` (a dataset or a group) exists, every group on its path
  // included.
  bool Has(const std::string& name) const;
  // An existing group; a missing one is an Error.
  Hdf5Group OpenGroup(const std::string& name) const;
  // The group `name`, made (with any missing group on its path) unless it exists.
  Hdf5Group OpenOrCreateGroup(const std::string& name) const;

  // The shape of dataset `name`, read without reading its values. A scalar dataset
  // has the shape {}.
  std::vector<int64_t> DatasetShape(const std::string& name) const;
  // Reads dataset `name`, whose shape must be `shape` (callers check it first with
  // DatasetShape, to say what a wrong shape means to them), into `values`, which
  // holds as many floats as the shape does.
  void ReadFloats(const std::string& name, const std::vector<int64_t>& shape, float* values) const;
  // Writes a new float32 dataset `name` of `shape`, from `values` (as many as the
  // shape holds). The name must not exist yet.
  void WriteFloats(const std::string& name, const std::vector<int64_t>& shape,
                   const float* values) const;

 protected:
  Hdf5Group(Hdf5Id id, std::string file, std::string path)
      : id_(std::move(id)), file_(std::move(file)), path_(std::move(path)) {}
  // The path of member `name` from the file's root, for messages.
  std::string MemberPath(const std::string& name) const;
  // Dataset `name`, open; a missing one is an Error.
  Hdf5Id OpenDataset(const std::string& name) const;

  Hdf5Id id_;
  std::string file_;
  std::string path_;
};

// An open HDF5 file, closed when this goes out of scope.
class Hdf5File : public Hdf5Group {
 public:
  // An existing file, read-only. A missing file, or one that is not HDF5, is an Error.
  static Hdf5File Open(const std::string& filename);
  // A new file on disk (an existing one is truncated), open for writing.
  static Hdf5File Create(const std::string& filename);
  // A new file that lives in memory until SaveAtomically writes it to `filename`: how
  // weights files are written, so that a crash never leaves half a file under the
  // name (util/io.hpp's WriteFileAtomically writes the bytes).
  static Hdf5File CreateInMemory(const std::string& filename);

  // Writes what the library still buffers to the disk (a file from Create), so that a
  // reader sees every dataset as it stands.
  void Flush() const;
  // For a file from CreateInMemory: writes its image to its filename atomically
  // (temporary file in the same folder, fsync, rename). Close every group and dataset
  // opened from it first.
  void SaveAtomically() const;

 private:
  Hdf5File(Hdf5Id id, std::string file, bool in_memory)
      : Hdf5Group(std::move(id), std::move(file), ""), in_memory_(in_memory) {}
  bool in_memory_ = false;
};

// A float32 dataset that grows along its first axis: rows of a fixed shape are
// appended (HDF5Output keeps every batch). Stored in chunks of about 1 MiB.
class Hdf5RowAppender {
 public:
  // Makes dataset `name` in `group` with no rows yet; each row has shape `row_shape`,
  // whose dimensions must be positive.
  Hdf5RowAppender(const Hdf5Group& group, const std::string& name,
                  const std::vector<int64_t>& row_shape);
  // Appends `rows` rows from `values` (rows times the row's element count floats).
  void Append(const float* values, int64_t rows);

  const std::vector<int64_t>& row_shape() const { return row_shape_; }
  int64_t rows() const { return rows_; }

 private:
  Hdf5Id dataset_;
  std::string description_;  // "<file>: dataset '<path>'", for messages
  std::vector<int64_t> row_shape_;
  int64_t rows_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_UTIL_HDF5_HPP_
