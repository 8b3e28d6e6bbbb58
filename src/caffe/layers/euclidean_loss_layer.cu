// Device path of EuclideanLossLayer: the difference stays on the device; only the
// scalar loss (a cuBLAS dot, as the CPU path uses BLAS) comes back.
#include "caffe/layers/euclidean_loss_layer.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void EuclideanLossLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = bottom[0]->count();
  math::gpu_sub(count, bottom[0]->gpu_data(), bottom[1]->gpu_data(),
                difference_.mutable_gpu_data());
  const float sum_sq = math::gpu_dot(count, difference_.gpu_data(), difference_.gpu_data());
  top[0]->mutable_cpu_data()[0] = sum_sq / bottom[0]->shape(0) / 2.f;
}

void EuclideanLossLayer::Backward_gpu(const vector<Blob*>& top,
                                      const vector<bool>& propagate_down,
                                      const vector<Blob*>& bottom) {
  const float scale = top[0]->cpu_diff()[0] / bottom[0]->shape(0);
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    // d/da = (a - b) / num, d/db = -(a - b) / num.
    math::gpu_scale(difference_.count(), i == 0 ? scale : -scale, difference_.gpu_data(),
                    bottom[i]->mutable_gpu_diff());
  }
}

}  // namespace caffe
