// How well a step's selection served all ranks: the share of the ranks' summed
// residual V (its squared L2 norm, the contraction measure of sparsification theory)
// that the chosen coordinates held, beside the share the best possible choice of as
// many coordinates (the global top-k of |V|) would have held; and the same for the
// importance |V| / (|w| + epsilon) that IWP ranks by. A diagnostic
// (sync_param.measure_capture): finding V costs one dense all-reduce per step, which
// the byte counters leave out.
#ifndef CAFFE_SYNC_CAPTURE_PROBE_HPP_
#define CAFFE_SYNC_CAPTURE_PROBE_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

struct CaptureShares {
  double chosen = 0;  // sum of V_i^2 over the chosen coordinates / sum over all
  double best = 0;    // the same for the |chosen| largest |V_i|
};

// summed[i] is V_i, sent[i] nonzero where coordinate i travelled. Both shares are 0
// when V is 0 everywhere. With `scale` (same length), V_i / scale_i stands for V_i:
// IWP's own measure with scale |w| + epsilon.
CaptureShares MeasureCapture(const std::vector<float>& summed, const std::vector<uint8_t>& sent,
                             const std::vector<float>* scale = nullptr);

}  // namespace caffe

#endif  // CAFFE_SYNC_CAPTURE_PROBE_HPP_
