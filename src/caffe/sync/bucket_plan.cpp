#include "caffe/sync/bucket_plan.hpp"

#include <algorithm>

#include "caffe/util/error.hpp"

namespace caffe {

BucketPlan::BucketPlan(const std::vector<int64_t>& sizes, const std::vector<int>& ready_layers,
                       int64_t capacity)
    : sizes_(sizes) {
  CAFFE_REQUIRE(capacity >= 1) << "bucket capacity must be at least one element, found "
                               << capacity;
  CAFFE_REQUIRE(ready_layers.empty() || ready_layers.size() == sizes.size())
      << "bucket plan: " << ready_layers.size() << " ready layers for " << sizes.size()
      << " parameters";
  Bucket current;
  current.ready_after_layer = -1;
  auto close = [&]() {
    if (current.elements > 0) buckets_.push_back(current);
    current = Bucket();
    current.ready_after_layer = -1;
  };
  for (int p = static_cast<int>(sizes.size()) - 1; p >= 0; --p) {
    // Without ready layers nothing is final before the end of backward (layer 0).
    const int ready = ready_layers.empty() ? 0 : ready_layers[p];
    int64_t start = 0;
    while (start < sizes[p]) {
      const int64_t take = std::min(sizes[p] - start, capacity - current.elements);
      current.pieces.push_back({p, start, take});
      current.elements += take;
      current.ready_after_layer = current.ready_after_layer < 0
                                      ? ready
                                      : std::min(current.ready_after_layer, ready);
      start += take;
      if (current.elements == capacity) close();
    }
  }
  close();
}

int BucketPlan::ReadyCount(int layer) const {
  int count = 0;
  // A later bucket holds earlier parameters, so its ready layer is never higher; the
  // running minimum keeps the count monotone even for unusual ready layers.
  int ready_bound = INT32_MAX;
  for (const Bucket& bucket : buckets_) {
    ready_bound = std::min(ready_bound, bucket.ready_after_layer);
    if (ready_bound < layer) break;
    ++count;
  }
  return count;
}

}  // namespace caffe
