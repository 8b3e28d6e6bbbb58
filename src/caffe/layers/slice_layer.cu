// Device path of SliceLayer: each top is outer_ runs of (its axis size x inner_)
// elements, taken at its offset along the axis from every run of the bottom.
#include "caffe/layers/slice_layer.hpp"
#include "caffe/util/device_kernels.cuh"

namespace caffe {

void SliceLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  if (top.size() == 1) return;  // the top shares the bottom's memory
  const float* x = bottom[0]->gpu_data();
  const int64_t bottom_run = bottom[0]->shape(axis_) * inner_;
  int64_t offset = 0;  // along axis_
  for (Blob* blob : top) {
    const int64_t run = blob->shape(axis_) * inner_;
    CopyBlocks(outer_, run, bottom_run, run, x + offset * inner_, blob->mutable_gpu_data());
    offset += blob->shape(axis_);
  }
}

void SliceLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  if (top.size() == 1 || !propagate_down[0]) return;
  float* dx = bottom[0]->mutable_gpu_diff();
  const int64_t bottom_run = bottom[0]->shape(axis_) * inner_;
  int64_t offset = 0;
  for (Blob* blob : top) {
    const int64_t run = blob->shape(axis_) * inner_;
    CopyBlocks(outer_, run, run, bottom_run, blob->gpu_diff(), dx + offset * inner_);
    offset += blob->shape(axis_);
  }
}

}  // namespace caffe
