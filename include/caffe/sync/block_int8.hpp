// Block-scaled 8-bit values on the wire (SyncParameter value_encoding: INT8): each
// block of kInt8BlockValues values travels as one float scale, the block's largest
// magnitude / 127, and one signed byte per value, the value / scale rounded to the
// nearest integer. 68 bytes carry 64 values: 17/32 of FP16's bytes, 17/64 of FP32's.
//
// A value small against its block's largest rounds to zero; what a rounding removes
// is returned to the caller (`arrives`), which keeps it in a residual, so nothing is
// lost, only delayed. A block holding a NaN or an infinity travels with a NaN scale
// and decodes to NaN throughout, so the exchange's finiteness checks see it.
#ifndef CAFFE_SYNC_BLOCK_INT8_HPP_
#define CAFFE_SYNC_BLOCK_INT8_HPP_

#include <cstdint>

namespace caffe {

constexpr int64_t kInt8BlockValues = 64;

// Bytes that `count` values take, blocks counted from the first value.
int64_t BlockInt8Bytes(int64_t count);

// Writes BlockInt8Bytes(count) bytes to `out`, and what each value decodes to at the
// receiver to arrives[i] (may alias `in`).
void EncodeBlockInt8(const float* in, int64_t count, uint8_t* out, float* arrives);

// The values that EncodeBlockInt8 wrote, `count` of them, into `out`.
void DecodeBlockInt8(const uint8_t* in, int64_t count, float* out);

}  // namespace caffe

#endif  // CAFFE_SYNC_BLOCK_INT8_HPP_
