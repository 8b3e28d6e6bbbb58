#include "caffe/sync/residual_kernels.hpp"

#include <glog/logging.h>

namespace caffe {

bool ResidualKernels::ClipAndAccumulateBucket(const vector<Blob*>&, const vector<size_t>&, float,
                                              float, bool) {
  LOG(FATAL) << "these residual kernels work on every blob at once (SupportsBuckets is false)";
  return false;
}

void ResidualKernels::CopySelected(size_t, const ResidualSelection&, float*) const {
  LOG(FATAL) << "these residual kernels work on every blob at once (SupportsBuckets is false)";
}

void ResidualKernels::Load(ResidualState state) {
  const size_t m = state.residual.size();
  CHECK_EQ(state.velocity.size(), m) << "residual state: velocities of another net";
  CHECK_EQ(state.last_sent.size(), m) << "residual state: ages of another net";
  CHECK(state.known_importance.empty() || state.known_importance.size() == m)
      << "residual state: known importances of another net";
  counts_.resize(m);
  for (size_t b = 0; b < m; ++b) {
    const size_t n = state.residual[b].size();
    counts_[b] = static_cast<int64_t>(n);
    CHECK(state.velocity[b].empty() || state.velocity[b].size() == n) << "blob " << b;
    CHECK_EQ(state.last_sent[b].size(), n) << "blob " << b;
    if (!state.known_importance.empty()) {
      CHECK_EQ(state.known_importance[b].size(), n) << "blob " << b;
    }
  }
  tracks_known_importance_ = !state.known_importance.empty();
  Replace(std::move(state));
}

#ifndef USE_CUDA
std::unique_ptr<ResidualKernels> CreateDeviceResidualKernels() { return nullptr; }
#endif

}  // namespace caffe
