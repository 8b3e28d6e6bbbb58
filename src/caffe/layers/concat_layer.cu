// Device path of ConcatLayer: each bottom is outer_ runs of (its axis size x inner_)
// elements, placed at its offset along the axis in every run of the top.
#include "caffe/layers/concat_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

void ConcatLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (bottom.size() == 1) return;  // the top shares the bottom's memory
  float* y = top[0]->mutable_gpu_data();
  const int64_t top_run = top[0]->shape(axis_) * inner_;
  int64_t offset = 0;  // along axis_
  for (Blob* blob : bottom) {
    const int64_t run = blob->shape(axis_) * inner_;
    CopyBlocks(outer_, run, run, top_run, blob->gpu_data(), y + offset * inner_);
    offset += blob->shape(axis_);
  }
}

void ConcatLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  if (bottom.size() == 1) return;
  const float* dy = top[0]->gpu_diff();
  const int64_t top_run = top[0]->shape(axis_) * inner_;
  int64_t offset = 0;
  for (size_t i = 0; i < bottom.size(); ++i) {
    const int64_t run = bottom[i]->shape(axis_) * inner_;
    if (propagate_down[i]) {
      CopyBlocks(outer_, run, top_run, run, dy + offset * inner_, bottom[i]->mutable_gpu_diff());
    }
    offset += bottom[i]->shape(axis_);
  }
}

}  // namespace caffe
