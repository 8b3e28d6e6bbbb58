#include "caffe/layers/threshold_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void ThresholdLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float threshold = layer_param_.threshold_param().threshold();
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > threshold ? 1.f : 0.f;
}

void ThresholdLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (propagate_down[0]) math::set(bottom[0]->count(), 0.f, bottom[0]->mutable_cpu_diff());
}

REGISTER_LAYER_CLASS(Threshold);

}  // namespace caffe
