// Wire form of a selected index set within one parameter blob of n elements:
// int32 offsets (4 bytes per index) or a bitmap (n/8 bytes), whichever the setting
// asks for; AUTO takes the smaller, so dense selections never cost more than n/8.
#ifndef CAFFE_SYNC_INDEX_CODEC_HPP_
#define CAFFE_SYNC_INDEX_CODEC_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "caffe/proto/caffe.pb.h"

namespace caffe {

// Bytes the encoded form takes for `count` indices out of `n` (encoding not AUTO).
int64_t EncodedIndexBytes(SyncParameter::IndexEncoding encoding, int64_t count, int64_t n);
// The encoding AUTO resolves to for these sizes (ties go to INDEX).
SyncParameter::IndexEncoding ChooseIndexEncoding(SyncParameter::IndexEncoding requested,
                                                 int64_t count, int64_t n);
// Appends the encoding of `sorted_indices` (strictly increasing, all < n) to `out`.
void EncodeIndices(const std::vector<int32_t>& sorted_indices, int64_t n,
                   SyncParameter::IndexEncoding encoding, std::string* out);
// Reads `count` indices encoded with `encoding` from `data`; returns bytes consumed.
// Throws caffe::Error when the data are inconsistent (a corrupt message).
int64_t DecodeIndices(const char* data, int64_t available, SyncParameter::IndexEncoding encoding,
                      int64_t count, int64_t n, std::vector<int32_t>* sorted_indices);

}  // namespace caffe

#endif  // CAFFE_SYNC_INDEX_CODEC_HPP_
