#include "caffe/sync/index_codec.hpp"

#include <cstring>

#include "caffe/common.hpp"

namespace caffe {

int64_t EncodedIndexBytes(SyncParameter::IndexEncoding encoding, int64_t count, int64_t n) {
  return encoding == SyncParameter::BITMAP ? (n + 7) / 8 : 4 * count;
}

SyncParameter::IndexEncoding ChooseIndexEncoding(SyncParameter::IndexEncoding requested,
                                                 int64_t count, int64_t n) {
  if (requested != SyncParameter::AUTO) return requested;
  return EncodedIndexBytes(SyncParameter::INDEX, count, n) <=
                 EncodedIndexBytes(SyncParameter::BITMAP, count, n)
             ? SyncParameter::INDEX
             : SyncParameter::BITMAP;
}

void EncodeIndices(const std::vector<int32_t>& sorted_indices, int64_t n,
                   SyncParameter::IndexEncoding encoding, std::string* out) {
  CHECK_NE(encoding, SyncParameter::AUTO);
  const size_t start = out->size();
  if (encoding == SyncParameter::INDEX) {
    out->resize(start + 4 * sorted_indices.size());
    if (!sorted_indices.empty()) {
      std::memcpy(&(*out)[start], sorted_indices.data(), 4 * sorted_indices.size());
    }
    return;
  }
  out->resize(start + (n + 7) / 8, '\0');
  unsigned char* bits = reinterpret_cast<unsigned char*>(&(*out)[start]);
  for (int32_t i : sorted_indices) bits[i >> 3] |= static_cast<unsigned char>(1u << (i & 7));
}

int64_t DecodeIndices(const char* data, int64_t available, SyncParameter::IndexEncoding encoding,
                      int64_t count, int64_t n, std::vector<int32_t>* sorted_indices) {
  sorted_indices->clear();
  const int64_t bytes = EncodedIndexBytes(encoding, count, n);
  CAFFE_REQUIRE(bytes <= available) << "index message truncated: need " << bytes
                                    << " bytes, have " << available;
  if (encoding == SyncParameter::INDEX) {
    sorted_indices->resize(count);
    if (count > 0) std::memcpy(sorted_indices->data(), data, 4 * count);
    for (int64_t i = 0; i < count; ++i) {
      const int32_t v = (*sorted_indices)[i];
      CAFFE_REQUIRE(v >= 0 && v < n && (i == 0 || v > (*sorted_indices)[i - 1]))
          << "index message corrupt: index " << v << " at position " << i;
    }
  } else {
    CAFFE_REQUIRE(encoding == SyncParameter::BITMAP) << "unknown index encoding " << encoding;
    const unsigned char* bits = reinterpret_cast<const unsigned char*>(data);
    sorted_indices->reserve(count);
    for (int64_t byte = 0; byte < (n + 7) / 8; ++byte) {
      unsigned v = bits[byte];
      while (v) {
        const int bit = __builtin_ctz(v);
        const int64_t idx = byte * 8 + bit;
        CAFFE_REQUIRE(idx < n) << "index message corrupt: bit " << idx << " beyond " << n;
        sorted_indices->push_back(static_cast<int32_t>(idx));
        v &= v - 1;
      }
    }
    CAFFE_REQUIRE(static_cast<int64_t>(sorted_indices->size()) == count)
        << "index message corrupt: bitmap holds " << sorted_indices->size() << " indices, header says "
        << count;
  }
  return bytes;
}

}  // namespace caffe
