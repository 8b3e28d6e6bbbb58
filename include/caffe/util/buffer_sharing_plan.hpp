// Assigns buffers to values that each live over a closed interval of steps, so that
// values whose intervals do not overlap can use one buffer. Net uses it for the
// activation gradients of a backward pass (Net::ShareActivationDiffs).
#ifndef CAFFE_UTIL_BUFFER_SHARING_PLAN_HPP_
#define CAFFE_UTIL_BUFFER_SHARING_PLAN_HPP_

#include <cstddef>
#include <vector>

namespace caffe {

// A value needs `bytes` from step `first` to step `last`, both included.
struct BufferUse {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct BufferSharingPlan {
  // buffer_of[i]: the buffer use i is given.
  std::vector<int> buffer_of;
  // Each buffer's size: the largest use it holds.
  std::vector<size_t> buffer_bytes;
  size_t bytes_before = 0;  // one buffer per use
  size_t bytes_after = 0;   // the sum of buffer_bytes
};

// Uses that share a buffer never share a step: two uses alive in the same step get
// different buffers. Greedy in the order of first step: a use takes the free buffer
// that fits it most tightly, else grows the largest free one, else opens a new one.
BufferSharingPlan PlanSharedBuffers(const std::vector<BufferUse>& uses);

}  // namespace caffe

#endif  // CAFFE_UTIL_BUFFER_SHARING_PLAN_HPP_
