#include "caffe/layers/euclidean_loss_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void EuclideanLossLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  LAYER_REQUIRE(bottom[0]->count(1) == bottom[1]->count(1))
      << "bottoms '" << bottom_name(0) << "' (" << ShapeToString(bottom[0]->shape())
      << ") and '" << bottom_name(1) << "' (" << ShapeToString(bottom[1]->shape())
      << ") must have the same number of values per example";
  difference_.ReshapeLike(*bottom[0]);
}

void EuclideanLossLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  math::sub(count, bottom[0]->cpu_data(), bottom[1]->cpu_data(),
            difference_.mutable_cpu_data());
  const float sum_sq = math::dot(count, difference_.cpu_data(), difference_.cpu_data());
  top[0]->mutable_cpu_data()[0] = sum_sq / bottom[0]->shape(0) / 2.f;
}

void EuclideanLossLayer::Backward_cpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  const float scale = top[0]->cpu_diff()[0] / bottom[0]->shape(0);
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    // d/da = (a - b) / num, d/db = -(a - b) / num.
    math::scale(difference_.count(), i == 0 ? scale : -scale, difference_.cpu_data(),
                bottom[i]->mutable_cpu_diff());
  }
}

REGISTER_LAYER_CLASS(EuclideanLoss);

}  // namespace caffe
