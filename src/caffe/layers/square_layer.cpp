#include "caffe/layers/square_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void SquareLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  // Backward reads x, which an in-place forward would have overwritten with x * x.
  LAYER_REQUIRE(top[0] != bottom[0]) << "cannot run in place (top '" << top_name(0)
                                      << "' is its bottom); give the top its own name";
  NeuronLayer::Reshape(bottom, top);
}

void SquareLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  const int64_t n = bottom[0]->count();
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * x[i];
  });
}

void SquareLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* x = bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  const int64_t n = bottom[0]->count();
  ParallelFor(n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = 2.f * x[i] * dy[i];
  });
}

REGISTER_LAYER_CLASS(Square);

}  // namespace caffe
