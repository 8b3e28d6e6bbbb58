#include "caffe/layers/clip_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"

namespace caffe {

void ClipLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ClipParameter& p = layer_param_.clip_param();
  // BVLC declares both bounds required; a file without them is refused here, by name.
  LAYER_REQUIRE(p.has_min() && p.has_max()) << "Clip needs clip_param { min max }";
  LAYER_REQUIRE(p.min() <= p.max())
      << "clip_param.min (" << p.min() << ") is above max (" << p.max() << ")";
}

void ClipLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float lo = layer_param_.clip_param().min(), hi = layer_param_.clip_param().max();
  if (bottom[0] == top[0]) bottom_copy_.CopyFrom(*bottom[0], false, true);
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}

void ClipLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                             const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float lo = layer_param_.clip_param().min(), hi = layer_param_.clip_param().max();
  const float* x = bottom[0] == top[0] ? bottom_copy_.cpu_data() : bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0.f;
}

REGISTER_LAYER_CLASS(Clip);

}  // namespace caffe
