// Reading MNIST-format IDX files (unsigned-byte images and labels, gzipped or plain)
// and turning their records into Datum: 1 x rows x cols uint8 pixels with the label.
// Used by tools/convert_idx; everything malformed is a caffe::Error naming the file.
#ifndef CAFFE_DATA_IDX_READER_HPP_
#define CAFFE_DATA_IDX_READER_HPP_

#include <cstdint>
#include <string>

#include "caffe/proto/caffe.pb.h"

namespace caffe {

constexpr uint32_t kIdxImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kIdxLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension

// The whole file, inflated when it is gzip (zlib reads plain files unchanged).
std::string ReadMaybeGzipped(const std::string& path);

// A validated images + labels pair held in memory.
class IdxDataset {
 public:
  // `*_source` names each file in error messages. Throws caffe::Error unless both
  // headers are right, each file is exactly as long as its header says, and the
  // counts agree.
  IdxDataset(std::string images, const std::string& images_source, std::string labels,
             const std::string& labels_source);
  // Reads both files (see ReadMaybeGzipped) and validates them as above.
  static IdxDataset FromFiles(const std::string& images_path, const std::string& labels_path);

  uint32_t size() const { return count_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  // Record `index` (< size()) as a 1 x rows x cols raw datum with its label.
  void ToDatum(uint32_t index, Datum* datum) const;

 private:
  std::string images_;
  std::string labels_;
  uint32_t count_ = 0;
  uint32_t rows_ = 0;
  uint32_t cols_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_DATA_IDX_READER_HPP_
