// Random choices every rank makes identically without a message: they depend only on
// the shared seed, the iteration and the blob. The IWP leader of a step and the
// stochastic update's draws against staleness come from here.
#ifndef CAFFE_SYNC_SHARED_RANDOM_HPP_
#define CAFFE_SYNC_SHARED_RANDOM_HPP_

#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define CAFFE_SHARED_RANDOM_HD __host__ __device__
#else
#define CAFFE_SHARED_RANDOM_HD
#endif

namespace caffe {

// SplitMix64's step: a bijective, well-mixed 64-bit function.
inline CAFFE_SHARED_RANDOM_HD uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// A number in [0, 1) for coordinate i of a stream (a SharedHash), from 24 random
// bits, so it is exact in float and the same on the host and the device.
inline CAFFE_SHARED_RANDOM_HD float CoordinateUniform(uint64_t stream, int64_t i) {
  return static_cast<float>(SplitMix64(stream ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 40) *
         (1.0f / 16777216.0f);
}

// The stochastic draw's (ResidualKernels::StochasticDraw) test of coordinate i: kept
// when a uniform in [0, 1) falls below min(1, scale x weight), all in float. The
// uniform is 24 bits of a 32-bit hash (two multiplies: the draw looks at every
// coordinate of every sparse blob each step, and 32-bit lanes vectorise twice as wide
// as SplitMix64's 64-bit ones, which AVX2 cannot multiply at all); seed is the
// stream folded to 32 bits (DrawSeed). The host's vectorised draw
// (host_passes.hpp) and the device's keep exactly the coordinates this keeps.
inline CAFFE_SHARED_RANDOM_HD uint32_t DrawSeed(uint64_t stream) {
  return static_cast<uint32_t>(stream ^ (stream >> 32));
}
inline CAFFE_SHARED_RANDOM_HD float DrawUniform(uint32_t seed, uint32_t i) {
  uint32_t x = seed + i * 0x9e3779b9u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}
inline CAFFE_SHARED_RANDOM_HD bool DrawKeeps(uint32_t seed, uint32_t i, float weight, float scale) {
  const float p = scale * weight;
  return DrawUniform(seed, i) < (p < 1.f ? p : 1.f);
}

// A well-mixed 64-bit hash of (seed, iteration, blob, salt).
uint64_t SharedHash(uint64_t seed, int64_t iter, int64_t blob, uint64_t salt);
// The leader rank for this step (blob = -1 for one leader per step).
int LeaderFor(uint64_t seed, int64_t iter, int64_t blob, int world_size);
// k distinct indices in [0, n), sorted, identical on every rank for the same inputs.
std::vector<int32_t> SharedRandomSubset(uint64_t seed, int64_t iter, int64_t blob, int64_t n,
                                        int64_t k, uint64_t salt);

}  // namespace caffe

#endif  // CAFFE_SYNC_SHARED_RANDOM_HPP_
