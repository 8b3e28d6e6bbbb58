// Random choices every rank makes identically without a message: they depend only on
// the shared seed, the iteration and the blob. The IWP leader of a step and the
// random extras against staleness come from here.
#ifndef CAFFE_SYNC_SHARED_RANDOM_HPP_
#define CAFFE_SYNC_SHARED_RANDOM_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

// A well-mixed 64-bit hash of (seed, iteration, blob, salt).
uint64_t SharedHash(uint64_t seed, int64_t iter, int64_t blob, uint64_t salt);
// The leader rank for this step (blob = -1 for one leader per step).
int LeaderFor(uint64_t seed, int64_t iter, int64_t blob, int world_size);
// k distinct indices in [0, n), sorted, identical on every rank for the same inputs.
std::vector<int32_t> SharedRandomSubset(uint64_t seed, int64_t iter, int64_t blob, int64_t n,
                                        int64_t k, uint64_t salt);

}  // namespace caffe

#endif  // CAFFE_SYNC_SHARED_RANDOM_HPP_
