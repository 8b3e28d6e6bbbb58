#include "caffe/data/idx_reader.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "caffe/common.hpp"

namespace caffe {

namespace {

constexpr size_t kImagesHeader = 16;  // magic, count, rows, cols
constexpr size_t kLabelsHeader = 8;   // magic, count

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Validates the header and length of an IDX file of `dims` dimensions; returns the item
// count and sets the bytes per item (and rows, cols for images).
uint32_t CheckIdx(const std::string& source, const std::string& bytes, uint32_t magic, int dims,
                  size_t* item_bytes, uint32_t* rows, uint32_t* cols) {
  // The magic number comes first: a swapped images/labels pair is the likeliest mistake.
  const size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() >= 4) {
    const uint32_t found = BigEndian32(bytes, 0);
    if (found != magic) {
      ErrorBuilder() << source << ": bad IDX magic number " << found << ", expected " << magic
                     << (magic == kIdxImagesMagic ? " (images)" : " (labels)");
    }
  }
  if (bytes.size() < header) {
    ErrorBuilder() << source << ": truncated IDX header (" << bytes.size()
                   << " bytes, expected " << header << ")";
  }
  const uint32_t count = BigEndian32(bytes, 4);
  *item_bytes = 1;
  if (dims == 3) {
    *rows = BigEndian32(bytes, 8);
    *cols = BigEndian32(bytes, 12);
    if (*rows == 0 || *cols == 0 || *rows > 65535 || *cols > 65535) {
      ErrorBuilder() << source << ": implausible image size " << *rows << "x" << *cols;
    }
    *item_bytes = static_cast<size_t>(*rows) * *cols;
  }
  // Cannot wrap: count < 2^32 and item_bytes < 2^32, so the product is below 2^64 - 2^33.
  const size_t expected = header + count * *item_bytes;
  if (bytes.size() < expected) {
    ErrorBuilder() << source << ": truncated: " << count << " items need " << expected
                   << " bytes, found " << bytes.size();
  }
  if (bytes.size() > expected) {
    ErrorBuilder() << source << ": " << (bytes.size() - expected)
                   << " unexpected bytes after the " << count << " items";
  }
  return count;
}

}  // namespace

std::string ReadMaybeGzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    ErrorBuilder() << path << ": cannot open (" << std::strerror(errno) << ")";
  }
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      ErrorBuilder() << path << ": read error (" << message << ")";
    }
    if (n == 0) break;
    bytes.append(buffer, n);
  }
  // A gzip stream cut short reads as a short file plus an error flag.
  int code = 0;
  const std::string message = gzerror(file, &code);
  gzclose(file);
  if (code != Z_OK && code != Z_BUF_ERROR) {
    ErrorBuilder() << path << ": corrupt gzip data (" << message << ")";
  }
  if (code == Z_BUF_ERROR) ErrorBuilder() << path << ": truncated gzip data";
  return bytes;
}

IdxDataset::IdxDataset(std::string images, const std::string& images_source, std::string labels,
                       const std::string& labels_source)
    : images_(std::move(images)), labels_(std::move(labels)) {
  size_t image_bytes = 0;
  size_t label_bytes = 0;
  uint32_t unused_rows = 0;
  uint32_t unused_cols = 0;
  count_ = CheckIdx(images_source, images_, kIdxImagesMagic, 3, &image_bytes, &rows_, &cols_);
  const uint32_t num_labels = CheckIdx(labels_source, labels_, kIdxLabelsMagic, 1, &label_bytes,
                                       &unused_rows, &unused_cols);
  if (count_ != num_labels) {
    ErrorBuilder() << images_source << " holds " << count_ << " images but " << labels_source
                   << " holds " << num_labels << " labels";
  }
}

IdxDataset IdxDataset::FromFiles(const std::string& images_path, const std::string& labels_path) {
  // Images first, so a missing images file is the error reported when both are bad.
  std::string images = ReadMaybeGzipped(images_path);
  std::string labels = ReadMaybeGzipped(labels_path);
  return IdxDataset(std::move(images), images_path, std::move(labels), labels_path);
}

void IdxDataset::ToDatum(uint32_t index, Datum* datum) const {
  CHECK_LT(index, count_);
  const size_t image_bytes = static_cast<size_t>(rows_) * cols_;
  datum->Clear();
  datum->set_channels(1);
  datum->set_height(static_cast<int>(rows_));
  datum->set_width(static_cast<int>(cols_));
  datum->set_data(images_.data() + kImagesHeader + index * image_bytes, image_bytes);
  datum->set_label(static_cast<unsigned char>(labels_[kLabelsHeader + index]));
}

}  // namespace caffe
