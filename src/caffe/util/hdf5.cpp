#include "caffe/util/hdf5.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "caffe/util/error.hpp"
#include "caffe/util/io.hpp"

namespace caffe {

namespace {

// The library prints its error stack to stderr at every failed call unless told not
// to, and the callers here report each failure themselves, in one line. The setting
// belongs to the calling thread, so it is made whenever a file is opened or made.
void SilenceLibraryErrors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// "2x3" for messages, as Blob's ShapeToString writes it (core, a part above this one).
std::string ShapeText(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += "x";
    text += std::to_string(shape[i]);
  }
  return text;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// A dataspace of `shape` (a scalar one for the shape {}), or an invalid id.
Hdf5Id MakeDataspace(const std::vector<int64_t>& shape) {
  if (shape.empty()) return Hdf5Id(H5Screate(H5S_SCALAR));
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Hdf5Id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
}

const char* TypeClassName(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "floating-point";
    case H5T_STRING:
      return "string";
    case H5T_ENUM:
      return "enum (h5py stores bool so)";
    case H5T_COMPOUND:
      return "compound";
    default:
      return "non-numeric";
  }
}

// The shape of an open dataset. The dimensions come from the file: refuse a count of
// elements that int64_t cannot hold.
std::vector<int64_t> ShapeOf(const Hdf5Id& dataset, const std::string& description) {
  Hdf5Id space(H5Dget_space(dataset.get()));
  CAFFE_REQUIRE(space.valid()) << description << ": its shape cannot be read";
  CAFFE_REQUIRE(H5Sget_simple_extent_type(space.get()) != H5S_NULL)
      << description << " holds no values (an HDF5 null dataspace)";
  const int rank = H5Sget_simple_extent_ndims(space.get());
  CAFFE_REQUIRE(rank >= 0) << description << ": its shape cannot be read";
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) {
    CAFFE_REQUIRE(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) == rank)
        << description << ": its shape cannot be read";
  }
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (hsize_t dim : dims) {
    const bool fits = dim <= static_cast<hsize_t>(INT64_MAX) &&
                      !__builtin_mul_overflow(count, static_cast<int64_t>(dim), &count);
    CAFFE_REQUIRE(fits) << description << " has more elements than 64 bits can count";
    shape.push_back(static_cast<int64_t>(dim));
  }
  return shape;
}

}  // namespace

// ------------------------------------------------------------------ Hdf5Id

Hdf5Id& Hdf5Id::operator=(Hdf5Id&& other) noexcept {
  if (this != &other) {
    Close();
    id_ = other.id_;
    other.id_ = -1;
  }
  return *this;
}

void Hdf5Id::Close() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE:
      H5Fclose(id_);
      break;
    case H5I_GROUP:
      H5Gclose(id_);
      break;
    case H5I_DATASET:
      H5Dclose(id_);
      break;
    case H5I_DATASPACE:
      H5Sclose(id_);
      break;
    case H5I_DATATYPE:
      H5Tclose(id_);
      break;
    case H5I_GENPROP_LST:
      H5Pclose(id_);
      break;
    default:
      H5Idec_ref(id_);
      break;
  }
  id_ = -1;
}

// ------------------------------------------------------------------ Hdf5Group

std::string Hdf5Group::MemberPath(const std::string& name) const {
  return path_.empty() ? name : path_ + "/" + name;
}

std::string Hdf5Group::Describe(const std::string& kind, const std::string& name) const {
  return file_ + ": " + kind + " '" + MemberPath(name) + "'";
}

bool Hdf5Group::Has(const std::string& name) const {
  if (name.empty()) return false;
  // H5Lexists answers for the last link of a path, and fails rather than saying no
  // when a group before it is missing: ask about each step of the path in turn.
  for (size_t slash = name.find('/');; slash = name.find('/', slash + 1)) {
    const std::string step = name.substr(0, slash);
    if (!step.empty() && H5Lexists(id(), step.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
  }
}

Hdf5Group Hdf5Group::OpenGroup(const std::string& name) const {
  CAFFE_REQUIRE(Has(name)) << Describe("group", name) << " is missing";
  Hdf5Id group(H5Gopen2(id(), name.c_str(), H5P_DEFAULT));
  CAFFE_REQUIRE(group.valid()) << Describe("group", name)
                               << " cannot be opened as a group (is it a dataset?)";
  return Hdf5Group(std::move(group), file_, MemberPath(name));
}

Hdf5Group Hdf5Group::OpenOrCreateGroup(const std::string& name) const {
  if (Has(name)) return OpenGroup(name);
  Hdf5Id links(H5Pcreate(H5P_LINK_CREATE));
  CHECK(links.valid() && H5Pset_create_intermediate_group(links.get(), 1) >= 0)
      << "HDF5 link creation properties";
  Hdf5Id group(H5Gcreate2(id(), name.c_str(), links.get(), H5P_DEFAULT, H5P_DEFAULT));
  CAFFE_REQUIRE(group.valid()) << Describe("group", name) << " cannot be created";
  return Hdf5Group(std::move(group), file_, MemberPath(name));
}

Hdf5Id Hdf5Group::OpenDataset(const std::string& name) const {
  CAFFE_REQUIRE(Has(name)) << Describe("dataset", name) << " is missing";
  Hdf5Id dataset(H5Dopen2(id(), name.c_str(), H5P_DEFAULT));
  CAFFE_REQUIRE(dataset.valid()) << Describe("dataset", name)
                                 << " cannot be opened as a dataset (is it a group?)";
  return dataset;
}

std::vector<int64_t> Hdf5Group::DatasetShape(const std::string& name) const {
  return ShapeOf(OpenDataset(name), Describe("dataset", name));
}

void Hdf5Group::ReadFloats(const std::string& name, const std::vector<int64_t>& shape,
                           float* values) const {
  const std::string description = Describe("dataset", name);
  const Hdf5Id dataset = OpenDataset(name);
  const std::vector<int64_t> found = ShapeOf(dataset, description);
  CAFFE_REQUIRE(found == shape) << description << " has shape " << ShapeText(found) << ", expected "
                                << ShapeText(shape);
  Hdf5Id type(H5Dget_type(dataset.get()));
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  CAFFE_REQUIRE(type_class == H5T_FLOAT || type_class == H5T_INTEGER)
      << description << " holds " << TypeClassName(type_class)
      << " values; expected floating-point or integer numbers";
  if (ElementCount(shape) == 0) return;
  // The library converts whatever is stored (float64, int64, ...) to float32.
  CAFFE_REQUIRE(H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >=
                0)
      << description << " could not be read (is the file damaged?)";
}

void Hdf5Group::WriteFloats(const std::string& name, const std::vector<int64_t>& shape,
                            const float* values) const {
  const std::string description = Describe("dataset", name);
  Hdf5Id space = MakeDataspace(shape);
  CAFFE_REQUIRE(space.valid()) << description << ": shape " << ShapeText(shape)
                               << " cannot be stored in HDF5";
  Hdf5Id dataset(H5Dcreate2(id(), name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                            H5P_DEFAULT, H5P_DEFAULT));
  CAFFE_REQUIRE(dataset.valid()) << description << " cannot be created (does it exist already?)";
  if (ElementCount(shape) == 0) return;
  CAFFE_REQUIRE(H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >=
                0)
      << description << " could not be written";
}

// ------------------------------------------------------------------ Hdf5File

Hdf5File Hdf5File::Open(const std::string& filename) {
  SilenceLibraryErrors();
  if (::access(filename.c_str(), R_OK) != 0) {
    ErrorBuilder() << filename << ": cannot open file (" << std::strerror(errno) << ")";
  }
  CAFFE_REQUIRE(H5Fis_hdf5(filename.c_str()) > 0) << filename << ": not an HDF5 file";
  Hdf5Id file(H5Fopen(filename.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  CAFFE_REQUIRE(file.valid())
      << filename << ": the HDF5 library cannot open it (is it damaged, or on a file system "
      << "without file locks? HDF5_USE_FILE_LOCKING=FALSE turns the library's locks off)";
  return Hdf5File(std::move(file), filename, /*in_memory=*/false);
}

Hdf5File Hdf5File::Create(const std::string& filename) {
  SilenceLibraryErrors();
  Hdf5Id file(H5Fcreate(filename.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  CAFFE_REQUIRE(file.valid()) << filename << ": cannot create the HDF5 file (a missing or "
                              << "read-only folder, or the file open elsewhere?)";
  return Hdf5File(std::move(file), filename, /*in_memory=*/false);
}

Hdf5File Hdf5File::CreateInMemory(const std::string& filename) {
  SilenceLibraryErrors();
  // The core driver keeps the file in memory, growing it 1 MiB at a time; without a
  // backing store it never touches the disk, and SaveAtomically takes its image.
  Hdf5Id access(H5Pcreate(H5P_FILE_ACCESS));
  CHECK(access.valid() && H5Pset_fapl_core(access.get(), size_t{1} << 20, 0) >= 0)
      << "HDF5 in-memory file properties";
  Hdf5Id file(H5Fcreate(filename.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()));
  CAFFE_REQUIRE(file.valid()) << filename << ": cannot make the HDF5 file in memory";
  return Hdf5File(std::move(file), filename, /*in_memory=*/true);
}

void Hdf5File::Flush() const {
  CAFFE_REQUIRE(H5Fflush(id(), H5F_SCOPE_LOCAL) >= 0) << file_ << ": cannot be flushed to disk";
}

void Hdf5File::SaveAtomically() const {
  CHECK(in_memory_) << file_ << ": SaveAtomically is for files made by CreateInMemory";
  // The image is what the file would hold on disk once everything buffered is written.
  CAFFE_REQUIRE(H5Fflush(id(), H5F_SCOPE_GLOBAL) >= 0)
      << file_ << ": the HDF5 image in memory cannot be completed";
  const ssize_t size = H5Fget_file_image(id(), nullptr, 0);
  CAFFE_REQUIRE(size > 0) << file_ << ": the HDF5 image in memory cannot be read";
  std::string bytes(static_cast<size_t>(size), '\0');
  CAFFE_REQUIRE(H5Fget_file_image(id(), &bytes[0], bytes.size()) == size)
      << file_ << ": the HDF5 image in memory cannot be read";
  WriteFileAtomically(file_, bytes);
}

// ------------------------------------------------------------------ Hdf5RowAppender

Hdf5RowAppender::Hdf5RowAppender(const Hdf5Group& group, const std::string& name,
                                 const std::vector<int64_t>& row_shape)
    : description_(group.Describe("dataset", name)), row_shape_(row_shape) {
  const int64_t row_size = ElementCount(row_shape);
  CHECK_GT(row_size, 0) << description_ << ": rows need at least one element";
  // Chunks of about 1 MiB, and at least one row, so that appending a batch touches
  // few chunks and a file of a few rows stays small.
  const int64_t chunk_rows =
      std::max<int64_t>(1, (int64_t{1} << 20) / (row_size * static_cast<int64_t>(sizeof(float))));
  std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED}, chunk{static_cast<hsize_t>(chunk_rows)};
  for (int64_t dim : row_shape) {
    dims.push_back(static_cast<hsize_t>(dim));
    max_dims.push_back(static_cast<hsize_t>(dim));
    chunk.push_back(static_cast<hsize_t>(dim));
  }
  const int rank = static_cast<int>(dims.size());
  Hdf5Id space(H5Screate_simple(rank, dims.data(), max_dims.data()));
  Hdf5Id properties(H5Pcreate(H5P_DATASET_CREATE));
  CAFFE_REQUIRE(space.valid() && properties.valid() &&
                H5Pset_chunk(properties.get(), rank, chunk.data()) >= 0)
      << description_ << ": rows of shape " << ShapeText(row_shape)
      << " cannot be stored in chunks";
  dataset_ = Hdf5Id(H5Dcreate2(group.id(), name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                               properties.get(), H5P_DEFAULT));
  CAFFE_REQUIRE(dataset_.valid()) << description_ << " cannot be created (does it exist already?)";
}

void Hdf5RowAppender::Append(const float* values, int64_t rows) {
  CHECK_GE(rows, 0);
  if (rows == 0) return;
  std::vector<hsize_t> extent{static_cast<hsize_t>(rows_ + rows)};
  std::vector<hsize_t> start{static_cast<hsize_t>(rows_)}, count{static_cast<hsize_t>(rows)};
  for (int64_t dim : row_shape_) {
    extent.push_back(static_cast<hsize_t>(dim));
    start.push_back(0);
    count.push_back(static_cast<hsize_t>(dim));
  }
  CAFFE_REQUIRE(H5Dset_extent(dataset_.get(), extent.data()) >= 0)
      << description_ << " cannot grow to " << rows_ + rows << " rows";
  // The new rows are a block at the end of the file's dataset, the whole of `values`.
  Hdf5Id file_space(H5Dget_space(dataset_.get()));
  Hdf5Id memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr));
  const bool written = file_space.valid() && memory_space.valid() &&
                       H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                           count.data(), nullptr) >= 0 &&
                       H5Dwrite(dataset_.get(), H5T_NATIVE_FLOAT, memory_space.get(),
                                file_space.get(), H5P_DEFAULT, values) >= 0;
  CAFFE_REQUIRE(written) << description_ << ": rows " << rows_ << " to " << rows_ + rows - 1
                         << " could not be written";
  rows_ += rows;
}

}  // namespace caffe
