// Wire form of a selected index set within one parameter blob of n elements:
// int32 offsets (4 bytes per index), a bitmap (n/8 bytes), or the gaps between sorted
// offsets as varints (about 1 byte per index at density 1/64); AUTO takes the
// smallest, so a dense selection never costs more than n/8.
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

}  // namespace caffe

#endif  // CAFFE_SYNC_INDEX_CODEC_HPP_
