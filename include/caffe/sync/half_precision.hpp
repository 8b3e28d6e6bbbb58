// IEEE 754 half precision (binary16) for values on the wire (SyncParameter
// value_encoding: FP16): round to nearest, ties to even, like a hardware conversion,
// except that finite values beyond half's range saturate at +-65504 instead of
// becoming infinite, so the excess can wait in a residual like any rounding error.
// NaN and infinities keep their class (the exchange's finiteness checks see them).
#ifndef CAFFE_SYNC_HALF_PRECISION_HPP_
#define CAFFE_SYNC_HALF_PRECISION_HPP_

#include <cstdint>
#include <cstring>

namespace caffe {

constexpr float kLargestHalf = 65504.f;

inline uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN
    return sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u);
  }
  // From 65520 up a correctly rounded result would be infinite: saturate instead.
  if (magnitude >= 0x477ff000u) return sign | 0x7bffu;
  if (magnitude >= 0x38800000u) {  // a normal half (>= 2^-14)
    const uint32_t exponent = (magnitude >> 23) - 127 + 15;
    uint32_t half = (exponent << 10) | ((magnitude >> 13) & 0x3ffu);
    const uint32_t rest = magnitude & 0x1fffu;
    // A carry out of the mantissa correctly moves to the next exponent.
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal halves count units of 2^-24; below 2^-25 everything rounds to zero (and
  // 2^-25 itself ties to the even zero).
  if (magnitude <= 0x33000000u) return sign;
  const uint32_t exponent = magnitude >> 23;
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14 .. 24
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t midpoint = 1u << (shift - 1);
  if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal: mantissa x 2^-24 is exact in float.
    const float value = static_cast<float>(mantissa) * (1.f / 16777216.f);
    std::memcpy(&bits, &value, 4);
    bits |= sign;
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// value rounded to half and back: what arrives of it.
inline float RoundToHalf(float value) { return HalfToFloat(FloatToHalf(value)); }

}  // namespace caffe

#endif  // CAFFE_SYNC_HALF_PRECISION_HPP_
