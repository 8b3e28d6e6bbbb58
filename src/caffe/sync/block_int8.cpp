#include "caffe/sync/block_int8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace caffe {

namespace {

constexpr float kLargestCode = 127.f;

}  // namespace

int64_t BlockInt8Bytes(int64_t count) {
  const int64_t blocks = (count + kInt8BlockValues - 1) / kInt8BlockValues;
  return count + blocks * static_cast<int64_t>(sizeof(float));
}

void EncodeBlockInt8(const float* in, int64_t count, uint8_t* out, float* arrives) {
  for (int64_t begin = 0; begin < count; begin += kInt8BlockValues) {
    const int64_t length = std::min(kInt8BlockValues, count - begin);
    float largest = 0.f;
    bool finite = true;
    for (int64_t i = begin; i < begin + length; ++i) {
      finite = finite && std::isfinite(in[i]);
      largest = std::max(largest, std::fabs(in[i]));
    }
    const float scale = !finite ? std::numeric_limits<float>::quiet_NaN() : largest / kLargestCode;
    std::memcpy(out, &scale, sizeof scale);
    out += sizeof scale;
    // The receiver multiplies each code by `scale`: the sender's `arrives` is that
    // same product, so sender and receiver agree to the bit.
    const float inverse = scale > 0.f ? kLargestCode / largest : 0.f;
    for (int64_t i = begin; i < begin + length; ++i) {
      const float rounded = finite ? std::nearbyint(in[i] * inverse) : 0.f;
      // Through the integer, as the receiver decodes it (a rounded -0 arrives as +0).
      const int8_t code = static_cast<int8_t>(std::min(kLargestCode, std::max(-kLargestCode, rounded)));
      *out++ = static_cast<uint8_t>(code);
      arrives[i] = static_cast<float>(code) * scale;
    }
  }
}

void DecodeBlockInt8(const uint8_t* in, int64_t count, float* out) {
  for (int64_t begin = 0; begin < count; begin += kInt8BlockValues) {
    const int64_t length = std::min(kInt8BlockValues, count - begin);
    float scale;
    std::memcpy(&scale, in, sizeof scale);
    in += sizeof scale;
    for (int64_t i = begin; i < begin + length; ++i) {
      out[i] = static_cast<float>(static_cast<int8_t>(*in++)) * scale;
    }
  }
}

}  // namespace caffe
