// How well a step's selection served all ranks: the share of the ranks' summed
// residual V (its squared L2 norm, the contraction measure of sparsification theory)
// that the chosen coordinates held, beside two references: the best choice of as
// many coordinates within each blob (the same per-blob counts: what a perfect choice
// inside the budget split would hold) and the best choice of as many over all blobs
// (the global top-k of |V|: what a perfect split would add). The same shares are
// measured in the importance |V| / (|w| + epsilon) that IWP ranks by. A diagnostic
// (sync_param.measure_capture): finding V costs one dense all-reduce per step, which
// the byte counters leave out.
#ifndef CAFFE_SYNC_CAPTURE_PROBE_HPP_
#define CAFFE_SYNC_CAPTURE_PROBE_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

struct CaptureShares {
  double chosen = 0;   // sum of V_i^2 over the chosen coordinates / sum over all
  double in_blobs = 0; // the same for each blob's |chosen in it| largest |V_i|
  double best = 0;     // the same for the |chosen| largest |V_i| overall
};

// summed[i] is V_i, sent[i] nonzero where coordinate i travelled; blob b covers
// [blob_begin[b], blob_begin[b + 1]) (blob_begin starts at 0; the last blob ends at
// the end). All shares are 0 when V is 0 everywhere. With `scale` (same length),
// V_i / scale_i stands for V_i: IWP's own measure with scale |w| + epsilon.
CaptureShares MeasureCapture(const std::vector<float>& summed, const std::vector<uint8_t>& sent,
                             const std::vector<int64_t>& blob_begin,
                             const std::vector<float>* scale = nullptr);

}  // namespace caffe

#endif  // CAFFE_SYNC_CAPTURE_PROBE_HPP_
