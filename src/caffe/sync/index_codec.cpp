#include "caffe/sync/index_codec.hpp"

#include <algorithm>
#include <cstring>

#include <glog/logging.h>

#include "caffe/util/error.hpp"

namespace caffe {

namespace {

int VarintBytes(uint32_t value) {
  int bytes = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++bytes;
  }
  return bytes;
}

// Bits the Rice code with parameter r takes for these gaps (without its parameter
// byte).
int64_t RiceBits(const std::vector<int32_t>& sorted_indices, int r) {
  int64_t bits = 0;
  int64_t previous = -1;
  for (int32_t i : sorted_indices) {
    const uint64_t gap = static_cast<uint64_t>(i - previous - 1);
    bits += static_cast<int64_t>(gap >> r) + 1 + r;
    previous = i;
  }
  return bits;
}

// The best Rice parameter near log2 of the mean gap (the optimum for geometric gaps
// lies within one of it).
int RiceParameter(const std::vector<int32_t>& sorted_indices, int64_t n) {
  if (sorted_indices.empty()) return 0;
  const double mean_gap = static_cast<double>(n) / static_cast<double>(sorted_indices.size());
  int guess = 0;
  while (guess < 30 && (2.0 * (int64_t{1} << guess)) <= mean_gap) ++guess;
  int best = guess;
  int64_t best_bits = RiceBits(sorted_indices, guess);
  for (int r = std::max(0, guess - 2); r <= std::min(30, guess + 2); ++r) {
    if (r == guess) continue;
    const int64_t bits = RiceBits(sorted_indices, r);
    if (bits < best_bits) {
      best = r;
      best_bits = bits;
    }
  }
  return best;
}

}  // namespace

int64_t EncodedIndexBytes(SyncParameter::IndexEncoding encoding,
                          const std::vector<int32_t>& sorted_indices, int64_t n) {
  switch (encoding) {
    case SyncParameter::BITMAP:
      return (n + 7) / 8;
    case SyncParameter::RICE:
      return 1 + (RiceBits(sorted_indices, RiceParameter(sorted_indices, n)) + 7) / 8;
    case SyncParameter::DELTA: {
      int64_t bytes = 0;
      int64_t previous = -1;
      for (int32_t i : sorted_indices) {
        bytes += VarintBytes(static_cast<uint32_t>(i - previous - 1));
        previous = i;
      }
      return bytes;
    }
    default:
      return 4 * static_cast<int64_t>(sorted_indices.size());
  }
}

SyncParameter::IndexEncoding ChooseIndexEncoding(SyncParameter::IndexEncoding requested,
                                                 const std::vector<int32_t>& sorted_indices,
                                                 int64_t n) {
  if (requested != SyncParameter::AUTO) return requested;
  SyncParameter::IndexEncoding best = SyncParameter::INDEX;
  int64_t best_bytes = EncodedIndexBytes(SyncParameter::INDEX, sorted_indices, n);
  for (auto candidate : {SyncParameter::BITMAP, SyncParameter::DELTA, SyncParameter::RICE}) {
    const int64_t bytes = EncodedIndexBytes(candidate, sorted_indices, n);
    if (bytes < best_bytes) {
      best = candidate;
      best_bytes = bytes;
    }
  }
  return best;
}

void EncodeIndices(const std::vector<int32_t>& sorted_indices, int64_t n,
                   SyncParameter::IndexEncoding encoding, std::string* out) {
  CHECK_NE(encoding, SyncParameter::AUTO);
  const size_t start = out->size();
  if (encoding == SyncParameter::RICE) {
    const int r = RiceParameter(sorted_indices, n);
    out->push_back(static_cast<char>(r));
    const size_t first = out->size();
    out->resize(first + (RiceBits(sorted_indices, r) + 7) / 8, '\0');
    unsigned char* bytes = reinterpret_cast<unsigned char*>(&(*out)[first]);
    int64_t bit = 0;
    auto put = [&](bool one) {
      if (one) bytes[bit >> 3] |= static_cast<unsigned char>(1u << (bit & 7));
      ++bit;
    };
    int64_t previous = -1;
    for (int32_t i : sorted_indices) {
      const uint64_t gap = static_cast<uint64_t>(i - previous - 1);
      previous = i;
      for (uint64_t q = gap >> r; q > 0; --q) put(true);
      put(false);
      for (int b = 0; b < r; ++b) put((gap >> b) & 1);
    }
    return;
  }
  if (encoding == SyncParameter::DELTA) {
    int64_t previous = -1;
    for (int32_t i : sorted_indices) {
      uint32_t gap = static_cast<uint32_t>(i - previous - 1);
      previous = i;
      while (gap >= 0x80) {
        out->push_back(static_cast<char>((gap & 0x7f) | 0x80));
        gap >>= 7;
      }
      out->push_back(static_cast<char>(gap));
    }
    return;
  }
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
  if (encoding == SyncParameter::RICE) {
    CAFFE_REQUIRE(available >= 1) << "index message truncated: no Rice parameter";
    const int r = static_cast<unsigned char>(data[0]);
    CAFFE_REQUIRE(r <= 30) << "index message corrupt: Rice parameter " << r;
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(data + 1);
    const int64_t total_bits = 8 * (available - 1);
    int64_t bit = 0;
    auto get = [&]() {
      CAFFE_REQUIRE(bit < total_bits) << "index message truncated or corrupt (Rice code)";
      const bool one = (bytes[bit >> 3] >> (bit & 7)) & 1;
      ++bit;
      return one;
    };
    int64_t previous = -1;
    sorted_indices->reserve(count);
    for (int64_t j = 0; j < count; ++j) {
      uint64_t q = 0;
      while (get()) {
        ++q;
        CAFFE_REQUIRE(static_cast<int64_t>(q << r) < n) << "index message corrupt: gap beyond " << n;
      }
      uint64_t low = 0;
      for (int b = 0; b < r; ++b) low |= static_cast<uint64_t>(get()) << b;
      const int64_t index = previous + 1 + static_cast<int64_t>((q << r) | low);
      CAFFE_REQUIRE(index < n) << "index message corrupt: index " << index << " beyond " << n;
      sorted_indices->push_back(static_cast<int32_t>(index));
      previous = index;
    }
    return 1 + (bit + 7) / 8;
  }
  if (encoding == SyncParameter::DELTA) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data);
    int64_t pos = 0;
    int64_t previous = -1;
    sorted_indices->reserve(count);
    for (int64_t j = 0; j < count; ++j) {
      uint64_t gap = 0;
      int shift = 0;
      while (true) {
        CAFFE_REQUIRE(pos < available && shift < 35) << "index message truncated or corrupt";
        const unsigned char byte = p[pos++];
        gap |= static_cast<uint64_t>(byte & 0x7f) << shift;
        shift += 7;
        if (!(byte & 0x80)) break;
      }
      const int64_t index = previous + 1 + static_cast<int64_t>(gap);
      CAFFE_REQUIRE(index < n) << "index message corrupt: index " << index << " beyond " << n;
      sorted_indices->push_back(static_cast<int32_t>(index));
      previous = index;
    }
    return pos;
  }
  const int64_t bytes = encoding == SyncParameter::BITMAP ? (n + 7) / 8 : 4 * count;
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

namespace {
// The encoding byte's value for a record without indices: the leader's importance
// was not finite.
constexpr uint8_t kNonFiniteMark = 0xff;
}  // namespace

void AppendBlobIndexRecord(const BlobIndexRecord& record, int64_t n,
                           SyncParameter::IndexEncoding requested, std::string* out) {
  const SyncParameter::IndexEncoding encoding = ChooseIndexEncoding(requested, record.indices, n);
  const uint8_t mark = record.non_finite ? kNonFiniteMark : static_cast<uint8_t>(encoding);
  const int64_t count = record.non_finite ? 0 : static_cast<int64_t>(record.indices.size());
  out->append(reinterpret_cast<const char*>(&record.threshold), 4);
  out->append(reinterpret_cast<const char*>(&record.vmr), 4);
  out->append(reinterpret_cast<const char*>(&mark), 1);
  out->append(reinterpret_cast<const char*>(&count), 8);
  if (!record.non_finite) EncodeIndices(record.indices, n, encoding, out);
}

int64_t ReadBlobIndexRecord(const char* data, int64_t available, int64_t n, BlobIndexRecord* record) {
  CAFFE_REQUIRE(available >= kBlobIndexHeaderBytes)
      << "index message truncated: " << available << " bytes left, a record header needs "
      << kBlobIndexHeaderBytes;
  uint8_t mark = 0;
  int64_t count = 0;
  std::memcpy(&record->threshold, data, 4);
  std::memcpy(&record->vmr, data + 4, 4);
  std::memcpy(&mark, data + 8, 1);
  std::memcpy(&count, data + 9, 8);
  record->non_finite = mark == kNonFiniteMark;
  record->indices.clear();
  if (record->non_finite) return kBlobIndexHeaderBytes;
  CAFFE_REQUIRE(SyncParameter::IndexEncoding_IsValid(mark) && mark != SyncParameter::AUTO)
      << "index message corrupt: unknown encoding " << static_cast<int>(mark);
  CAFFE_REQUIRE(count >= 0 && count <= n)
      << "index message corrupt: " << count << " indices for a blob of " << n;
  return kBlobIndexHeaderBytes +
         DecodeIndices(data + kBlobIndexHeaderBytes, available - kBlobIndexHeaderBytes,
                       static_cast<SyncParameter::IndexEncoding>(mark), count, n, &record->indices);
}

}  // namespace caffe
