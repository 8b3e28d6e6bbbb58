#include "caffe/util/buffer_sharing_plan.hpp"

#include <algorithm>
#include <numeric>

#include "caffe/util/error.hpp"

namespace caffe {

BufferSharingPlan PlanSharedBuffers(const std::vector<BufferUse>& uses) {
  BufferSharingPlan plan;
  plan.buffer_of.assign(uses.size(), -1);
  std::vector<size_t> order(uses.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Larger uses first among those starting together, so that a buffer opened for a
  // large use is the one later small uses fit into.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (uses[a].first != uses[b].first) return uses[a].first < uses[b].first;
    return uses[a].bytes > uses[b].bytes;
  });
  std::vector<int> busy_until;  // per buffer: the last step of its latest use
  for (size_t i : order) {
    const BufferUse& use = uses[i];
    CAFFE_REQUIRE(use.first <= use.last)
        << "buffer use " << i << " ends (step " << use.last << ") before it starts (step "
        << use.first << ")";
    plan.bytes_before += use.bytes;
    int tightest = -1, largest = -1;
    for (size_t b = 0; b < busy_until.size(); ++b) {
      if (busy_until[b] >= use.first) continue;
      const size_t size = plan.buffer_bytes[b];
      if (size >= use.bytes && (tightest < 0 || size < plan.buffer_bytes[tightest])) {
        tightest = static_cast<int>(b);
      }
      if (largest < 0 || size > plan.buffer_bytes[largest]) largest = static_cast<int>(b);
    }
    int chosen = tightest >= 0 ? tightest : largest;
    if (chosen < 0) {
      chosen = static_cast<int>(plan.buffer_bytes.size());
      plan.buffer_bytes.push_back(0);
      busy_until.push_back(use.last);
    }
    plan.buffer_bytes[chosen] = std::max(plan.buffer_bytes[chosen], use.bytes);
    busy_until[chosen] = use.last;
    plan.buffer_of[i] = chosen;
  }
  for (size_t size : plan.buffer_bytes) plan.bytes_after += size;
  return plan;
}

}  // namespace caffe
