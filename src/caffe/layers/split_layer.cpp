#include "caffe/layers/split_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void SplitLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 0; i < top.size(); ++i) {
    // In place, the summed gradient would overwrite a top's own diff while reading it.
    LAYER_REQUIRE(top[i] != bottom[0])
        << "top '" << top_name(static_cast<int>(i)) << "' cannot be the bottom itself";
    top[i]->ReshapeLike(*bottom[0]);
    top[i]->ShareData(*bottom[0]);
  }
}

void SplitLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const int64_t count = bottom[0]->count();
  float* dx = bottom[0]->mutable_cpu_diff();
  vector<const float*> inputs;
  for (const Blob* t : top) inputs.push_back(t->cpu_diff());
  const float* const* dy = inputs.data();
  const size_t num_inputs = inputs.size();
  // The tops' diffs added in top order, piece by piece, so that dx's piece stays in
  // L1 between the additions.
  ParallelFor(count, [=](int64_t begin, int64_t end) {
    for (int64_t start = begin; start < end; start += kL1PieceElements) {
      const int64_t stop = std::min(end, start + kL1PieceElements);
      if (dx != dy[0]) std::copy(dy[0] + start, dy[0] + stop, dx + start);
      for (size_t t = 1; t < num_inputs; ++t) {
        const float* d = dy[t];
        for (int64_t i = start; i < stop; ++i) dx[i] += d[i];
      }
    }
  });
}

REGISTER_LAYER_CLASS(Split);

}  // namespace caffe
