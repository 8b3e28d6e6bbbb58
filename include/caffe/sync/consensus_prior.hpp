// IWP's consensus prior (SyncParameter.consensus_prior): what every rank knows about
// a coordinate, blended into the leader's score.
//
// One leader chooses for all ranks from its own residual, which holds only its own
// share of each coordinate's sum. The all-reduce, though, tells every rank the summed
// value of each coordinate it carried. Kept per step waited (the known importance k_i,
// residual_kernels.hpp), k_i times the steps waited since estimates what all ranks
// together hold for i now, with no message. Blending it in lets a coordinate that
// matters on the other ranks be chosen by a leader that holds little of it.
//
// The arithmetic is shared by the host and the device kernels so both rank alike.
#ifndef CAFFE_SYNC_CONSENSUS_PRIOR_HPP_
#define CAFFE_SYNC_CONSENSUS_PRIOR_HPP_

#include <cstdint>

#ifdef __CUDACC__
#define CAFFE_CONSENSUS_HD __host__ __device__
#else
#define CAFFE_CONSENSUS_HD
#endif

namespace caffe {

// The steps a coordinate sent at `iter` had waited since it was last sent (at least 1:
// the first exchange after a fresh start counts as one step).
inline CAFFE_CONSENSUS_HD int32_t StepsWaited(int32_t iter, int32_t last_sent) {
  return iter - last_sent > 1 ? iter - last_sent : 1;
}

// The leader's score of a coordinate: (1 - weight) x its own importance + weight x the
// all-ranks estimate known_per_step x age (age = steps since last sent).
inline CAFFE_CONSENSUS_HD float ConsensusScore(float own, float known_per_step, int32_t age,
                                               float weight) {
  return (1.f - weight) * own + weight * known_per_step * static_cast<float>(age);
}

}  // namespace caffe

#endif  // CAFFE_SYNC_CONSENSUS_PRIOR_HPP_
