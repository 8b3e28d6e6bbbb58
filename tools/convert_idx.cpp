// Converts an MNIST-format IDX pair (images, labels; gzipped or plain) into an LMDB
// of Datum records: 1 x rows x cols uint8 pixels and the label, keyed "%08d" by
// record index so the database's key order is the files' order.
//   convert_idx IMAGES LABELS OUT_DB
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "caffe/common.hpp"
#include "caffe/data/db.hpp"
#include "caffe/proto/caffe.pb.h"

namespace {

using caffe::ErrorBuilder;

constexpr uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr int kRecordsPerCommit = 1000;

// zlib reads gzip and plain files alike, so both forms need no sniffing here.
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

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Validates the header and size of an IDX file of `dims` dimensions; returns the item
// count and sets the bytes per item (and rows, cols for images).
uint32_t CheckIdx(const std::string& path, const std::string& bytes, uint32_t magic,
                  int dims, size_t* item_bytes, uint32_t* rows, uint32_t* cols) {
  // The magic number comes first: a swapped images/labels pair is the likeliest mistake.
  const size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() >= 4) {
    const uint32_t found = BigEndian32(bytes, 0);
    if (found != magic) {
      ErrorBuilder() << path << ": bad IDX magic number " << found << ", expected " << magic
                     << (magic == kImagesMagic ? " (images)" : " (labels)");
    }
  }
  if (bytes.size() < header) {
    ErrorBuilder() << path << ": truncated IDX header (" << bytes.size() << " bytes, expected "
                   << header << ")";
  }
  const uint32_t count = BigEndian32(bytes, 4);
  *item_bytes = 1;
  if (dims == 3) {
    *rows = BigEndian32(bytes, 8);
    *cols = BigEndian32(bytes, 12);
    if (*rows == 0 || *cols == 0 || *rows > 65535 || *cols > 65535) {
      ErrorBuilder() << path << ": implausible image size " << *rows << "x" << *cols;
    }
    *item_bytes = static_cast<size_t>(*rows) * *cols;
  }
  const size_t expected = header + count * *item_bytes;
  if (bytes.size() < expected) {
    ErrorBuilder() << path << ": truncated: " << count << " items need " << expected
                   << " bytes, found " << bytes.size();
  }
  if (bytes.size() > expected) {
    ErrorBuilder() << path << ": " << (bytes.size() - expected)
                   << " unexpected bytes after the " << count << " items";
  }
  return count;
}

void Convert(const std::string& images_path, const std::string& labels_path,
             const std::string& db_path) {
  const std::string images = ReadMaybeGzipped(images_path);
  const std::string labels = ReadMaybeGzipped(labels_path);
  size_t image_bytes = 0;
  size_t label_bytes = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  const uint32_t num_images = CheckIdx(images_path, images, kImagesMagic, 3, &image_bytes,
                                       &rows, &cols);
  const uint32_t num_labels = CheckIdx(labels_path, labels, kLabelsMagic, 1, &label_bytes,
                                       &rows, &cols);
  if (num_images != num_labels) {
    ErrorBuilder() << images_path << " holds " << num_images << " images but " << labels_path
                   << " holds " << num_labels << " labels";
  }

  auto db = caffe::db::GetDB("lmdb");
  db->Open(db_path, caffe::db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  caffe::Datum datum;
  datum.set_channels(1);
  datum.set_height(static_cast<int>(rows));
  datum.set_width(static_cast<int>(cols));
  std::string value;
  char key[16];
  const char* pixels = images.data() + 16;
  const char* label_values = labels.data() + 8;
  for (uint32_t i = 0; i < num_images; ++i) {
    datum.set_data(pixels + i * image_bytes, image_bytes);
    datum.set_label(static_cast<unsigned char>(label_values[i]));
    datum.SerializeToString(&value);
    std::snprintf(key, sizeof(key), "%08u", i);
    txn->Put(key, value);
    if ((i + 1) % kRecordsPerCommit == 0) {
      txn->Commit();
      txn = db->NewTransaction();
    }
  }
  txn->Commit();
  db->Close();
  std::cout << "wrote " << num_images << " records of 1x" << rows << "x" << cols << " to "
            << db_path << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // the one-line result, not the library's progress notes
  gflags::SetUsageMessage(
      "converts MNIST-format IDX files (gzipped or plain) into an LMDB of Datum\n"
      "usage: convert_idx IMAGES LABELS OUT_DB");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 4) {
    std::cerr << "usage: convert_idx IMAGES LABELS OUT_DB\n"
                 "  IMAGES, LABELS: IDX files as MNIST distributes them (gzipped or plain)\n"
                 "  OUT_DB: the LMDB to create (must not exist)\n";
    return 1;
  }
  try {
    Convert(argv[1], argv[2], argv[3]);
  } catch (const std::exception& e) {  // caffe::Error, and anything unexpected
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
