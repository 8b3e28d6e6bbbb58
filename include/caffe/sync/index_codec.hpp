// Wire form of a selected index set within one parameter blob of n elements:
// int32 offsets (4 bytes per index), a bitmap (n/8 bytes), the gaps between sorted
// offsets as varints (about 1 byte per index at density 1/64), or the gaps in a
// Golomb-Rice code (about log2(mean gap) + 1.5 bits); AUTO takes the smallest, so a
// dense selection never costs more than n/8.
#ifndef CAFFE_SYNC_INDEX_CODEC_HPP_
#define CAFFE_SYNC_INDEX_CODEC_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "caffe/proto/caffe.pb.h"

namespace caffe {

// Bytes the encoded form of these indices takes (encoding not AUTO).
int64_t EncodedIndexBytes(SyncParameter::IndexEncoding encoding,
                          const std::vector<int32_t>& sorted_indices, int64_t n);
// The encoding AUTO resolves to for this set (ties go to INDEX, then BITMAP).
SyncParameter::IndexEncoding ChooseIndexEncoding(SyncParameter::IndexEncoding requested,
                                                 const std::vector<int32_t>& sorted_indices,
                                                 int64_t n);
// Appends the encoding of `sorted_indices` (strictly increasing, all < n) to `out`.
void EncodeIndices(const std::vector<int32_t>& sorted_indices, int64_t n,
                   SyncParameter::IndexEncoding encoding, std::string* out);
// Reads `count` indices encoded with `encoding` from `data`; returns bytes consumed.
// Throws caffe::Error when the data are inconsistent (a corrupt message).
int64_t DecodeIndices(const char* data, int64_t available, SyncParameter::IndexEncoding encoding,
                      int64_t count, int64_t n, std::vector<int32_t>* sorted_indices);

// One blob's part of an IWP leader's index message. The header says what the
// leader chose by (logged on every rank; PER_LAYER splits the next step's budget by
// the VMRs) and the indices follow in the smallest encoding. `non_finite` replaces
// the indices when the leader found its importance not finite, so that every rank
// learns it from the message and stops alike.
struct BlobIndexRecord {
  float threshold = 0;
  float vmr = 0;
  bool non_finite = false;
  std::vector<int32_t> indices;  // sorted, all < n
};
// Header bytes per record: threshold, vmr, encoding (or the non-finite mark), count.
constexpr int64_t kBlobIndexHeaderBytes = 4 + 4 + 1 + 8;
// Appends `record` for a blob of n elements, in `requested` (AUTO: the smallest).
void AppendBlobIndexRecord(const BlobIndexRecord& record, int64_t n,
                           SyncParameter::IndexEncoding requested, std::string* out);
// Reads one record for a blob of n elements; returns the bytes it took. Throws
// caffe::Error on a truncated or corrupt message.
int64_t ReadBlobIndexRecord(const char* data, int64_t available, int64_t n, BlobIndexRecord* record);

}  // namespace caffe

#endif  // CAFFE_SYNC_INDEX_CODEC_HPP_
