// The exact top-k selection the sparse methods share on the host (IWP's selection
// kernels, TOPK_ALLGATHER). The device version is DeviceSelectTopK
// (device_selection.hpp), which picks the same set.
#ifndef CAFFE_SYNC_TOP_K_HPP_
#define CAFFE_SYNC_TOP_K_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

// The sorted indices of the k largest of score[0, n), ties broken by the lower index:
// the same input always gives the same set. k <= 0 gives none, k >= n all.
std::vector<int32_t> TopKIndices(const float* score, int64_t n, int64_t k);

}  // namespace caffe

#endif  // CAFFE_SYNC_TOP_K_HPP_
