#include "caffe/blob.hpp"

#include <cmath>
#include <limits>

#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// Whether `shape` has non-negative dimensions whose product is `count`. Legacy 4-d
// dimensions come straight from a file: their product may overflow, and two negative
// ones would otherwise multiply to a plausible count.
bool HasCount(const vector<int64_t>& shape, int64_t count) {
  int64_t product = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(product, dim, &product)) return false;
  }
  return product == count;
}

}  // namespace

string ShapeToString(const vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::ostringstream out;
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "x" : "") << shape[i];
  return out.str();
}

vector<int64_t> ShapeFromProto(const BlobShape& proto) {
  return vector<int64_t>(proto.dim().begin(), proto.dim().end());
}

vector<int64_t> ShapeOfProto(const BlobProto& proto) {
  if (proto.has_shape()) return ShapeFromProto(proto.shape());
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    return {proto.num(), proto.channels(), proto.height(), proto.width()};
  }
  // A legacy blob with no shape fields at all: treat the values as a vector.
  return {static_cast<int64_t>(std::max(proto.data_size(), proto.double_data_size()))};
}

void Blob::Reshape(int64_t num, int64_t channels, int64_t height, int64_t width) {
  Reshape(vector<int64_t>{num, channels, height, width});
}

void Blob::Reshape(const BlobShape& shape) { Reshape(ShapeFromProto(shape)); }

void Blob::Reshape(const vector<int64_t>& shape) {
  CAFFE_REQUIRE(shape.size() <= static_cast<size_t>(kMaxBlobAxes))
      << "blob of " << shape.size() << " axes; at most " << kMaxBlobAxes << " are supported";
  int64_t count = 1;
  for (int64_t dim : shape) {
    CAFFE_REQUIRE(dim >= 0) << "blob shape " << ShapeToString(shape)
                            << " has a negative dimension";
    CAFFE_REQUIRE(dim == 0 || count <= std::numeric_limits<int64_t>::max() / dim)
        << "blob shape " << ShapeToString(shape) << " overflows the element count";
    count *= dim;
  }
  // The byte size must fit size_t too, or the buffer would wrap to a tiny allocation.
  CAFFE_REQUIRE(count <= std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(float)))
      << "blob shape " << ShapeToString(shape) << " is too large to allocate";
  shape_ = shape;
  count_ = count;
  if (count_ > capacity_ || !data_) {
    capacity_ = count_;
    data_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(float));
    diff_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(float));
  }
}

int Blob::CanonicalAxisIndex(int axis) const {
  CAFFE_REQUIRE(axis >= -num_axes() && axis < num_axes())
      << "axis " << axis << " is out of range for a blob of shape " << shape_string();
  return axis < 0 ? axis + num_axes() : axis;
}

int64_t Blob::count(int start, int end) const {
  CHECK_LE(start, end);
  CHECK_GE(start, 0);
  CHECK_LE(end, num_axes());
  int64_t c = 1;
  for (int i = start; i < end; ++i) c *= shape_[i];
  return c;
}

string Blob::shape_string() const {
  std::ostringstream out;
  for (int64_t d : shape_) out << d << " ";
  out << "(" << count_ << ")";
  return out.str();
}

int64_t Blob::LegacyShape(int index) const {
  CHECK_LE(num_axes(), 4) << "legacy accessors need a blob of at most 4 axes";
  if (index >= num_axes() || index < -num_axes()) return 1;
  return shape(index);
}

int64_t Blob::offset(int64_t n, int64_t c, int64_t h, int64_t w) const {
  return ((n * channels() + c) * height() + h) * width() + w;
}

int64_t Blob::offset(const vector<int64_t>& indices) const {
  CHECK_LE(indices.size(), shape_.size());
  int64_t off = 0;
  for (int i = 0; i < num_axes(); ++i) {
    off *= shape_[i];
    if (static_cast<int>(indices.size()) > i) off += indices[i];
  }
  return off;
}

const float* Blob::cpu_data() const {
  CHECK(data_);
  return static_cast<const float*>(data_->cpu_data());
}
const float* Blob::cpu_diff() const {
  CHECK(diff_);
  return static_cast<const float*>(diff_->cpu_data());
}
float* Blob::mutable_cpu_data() {
  CHECK(data_);
  return static_cast<float*>(data_->mutable_cpu_data());
}
float* Blob::mutable_cpu_diff() {
  CHECK(diff_);
  return static_cast<float*>(diff_->mutable_cpu_data());
}
const float* Blob::gpu_data() const {
  CHECK(data_);
  return static_cast<const float*>(data_->gpu_data());
}
const float* Blob::gpu_diff() const {
  CHECK(diff_);
  return static_cast<const float*>(diff_->gpu_data());
}
float* Blob::mutable_gpu_data() {
  CHECK(data_);
  return static_cast<float*>(data_->mutable_gpu_data());
}
float* Blob::mutable_gpu_diff() {
  CHECK(diff_);
  return static_cast<float*>(diff_->mutable_gpu_data());
}

void Blob::set_cpu_data(float* data) {
  CHECK(data);
  // Another blob may share our memory; give this one its own holder first.
  size_t size = count_ * sizeof(float);
  if (data_->size() != size) {
    data_ = std::make_shared<SyncedMemory>(size);
    diff_ = std::make_shared<SyncedMemory>(size);
  }
  data_->set_cpu_data(data);
}

void Blob::Update() {
  if (!data_) return;
  switch (data_->head()) {
#ifdef USE_CUDA
    case SyncedMemory::AT_GPU:
    case SyncedMemory::SYNCED:
      if (data_->head() == SyncedMemory::AT_GPU || diff_->head() == SyncedMemory::AT_GPU) {
        math::gpu_axpy(count_, -1.f, gpu_diff(), mutable_gpu_data());
        break;
      }
      [[fallthrough]];
#endif
    default:
      math::axpy(count_, -1.f, cpu_diff(), mutable_cpu_data());
  }
}

float Blob::asum_data() const { return count_ ? math::asum(count_, cpu_data()) : 0.f; }
float Blob::asum_diff() const { return count_ ? math::asum(count_, cpu_diff()) : 0.f; }
float Blob::sumsq_data() const {
  return count_ ? math::dot(count_, cpu_data(), cpu_data()) : 0.f;
}
float Blob::sumsq_diff() const {
  return count_ ? math::dot(count_, cpu_diff(), cpu_diff()) : 0.f;
}
void Blob::scale_data(float factor) {
  if (count_) math::scal(count_, factor, mutable_cpu_data());
}
void Blob::scale_diff(float factor) {
  if (count_) math::scal(count_, factor, mutable_cpu_diff());
}

void Blob::ShareData(const Blob& other) {
  CHECK_EQ(count_, other.count());
  data_ = other.data();
}

void Blob::ShareDiff(const Blob& other) {
  CHECK_EQ(count_, other.count());
  diff_ = other.diff();
}

void Blob::SetDiffMemory(shared_ptr<SyncedMemory> memory) {
  CHECK(memory);
  CHECK_GE(memory->size(), static_cast<size_t>(capacity_) * sizeof(float));
  diff_ = std::move(memory);
}

void Blob::SetDataMemory(shared_ptr<SyncedMemory> memory) {
  CHECK(memory);
  CHECK_GE(memory->size(), static_cast<size_t>(capacity_) * sizeof(float));
  data_ = std::move(memory);
}

void Blob::CopyFrom(const Blob& source, bool copy_diff, bool reshape) {
  if (source.count() != count_ || source.shape() != shape_) {
    CAFFE_REQUIRE(reshape) << "cannot copy a blob of shape " << ShapeToString(source.shape())
                           << " into one of shape " << ShapeToString(shape_);
    ReshapeLike(source);
  }
  if (count_ == 0) return;
  if (copy_diff) {
    math::copy(count_, source.cpu_diff(), mutable_cpu_diff());
  } else {
    math::copy(count_, source.cpu_data(), mutable_cpu_data());
  }
}

bool Blob::ShapeEquals(const BlobProto& proto) const { return ShapeOfProto(proto) == shape_; }

void Blob::FromProto(const BlobProto& proto, bool reshape) {
  vector<int64_t> shape = ShapeOfProto(proto);
  if (reshape) {
    Reshape(shape);
  } else {
    // Legacy 4-d protos of lower-rank blobs pad with leading ones; compare counts then.
    const bool same = shape == shape_ || (!proto.has_shape() && HasCount(shape, count_));
    CAFFE_REQUIRE(same) << "expected a blob of shape " << ShapeToString(shape_) << ", found "
                        << ShapeToString(shape);
  }
  float* data = mutable_cpu_data();
  if (proto.double_data_size() > 0) {
    CAFFE_REQUIRE(proto.double_data_size() == count_)
        << "blob holds " << proto.double_data_size() << " values, its shape "
        << ShapeToString(shape) << " needs " << count_;
    for (int64_t i = 0; i < count_; ++i) data[i] = static_cast<float>(proto.double_data(i));
  } else {
    CAFFE_REQUIRE(proto.data_size() == count_)
        << "blob holds " << proto.data_size() << " values, its shape " << ShapeToString(shape)
        << " needs " << count_;
    for (int64_t i = 0; i < count_; ++i) data[i] = proto.data(i);
  }
  if (proto.double_diff_size() > 0 || proto.diff_size() > 0) {
    float* diff = mutable_cpu_diff();
    if (proto.double_diff_size() > 0) {
      CAFFE_REQUIRE(proto.double_diff_size() == count_) << "blob diff has the wrong size";
      for (int64_t i = 0; i < count_; ++i) diff[i] = static_cast<float>(proto.double_diff(i));
    } else {
      CAFFE_REQUIRE(proto.diff_size() == count_) << "blob diff has the wrong size";
      for (int64_t i = 0; i < count_; ++i) diff[i] = proto.diff(i);
    }
  }
}

void Blob::ToProto(BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int64_t d : shape_) proto->mutable_shape()->add_dim(d);
  proto->mutable_data()->Reserve(static_cast<int>(count_));
  const float* data = count_ ? cpu_data() : nullptr;
  for (int64_t i = 0; i < count_; ++i) proto->add_data(data[i]);
  if (write_diff) {
    const float* diff = count_ ? cpu_diff() : nullptr;
    for (int64_t i = 0; i < count_; ++i) proto->add_diff(diff[i]);
  }
}

}  // namespace caffe
