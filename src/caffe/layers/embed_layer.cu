// Device path of EmbedLayer. Indices are validated on the host, as on the CPU path,
// so a bad index gives the same error naming the element; they are normally produced
// on the host by a data layer, so reading them there costs no transfer.
//
// The weight gradient is accumulated without atomics: the host groups the bottom
// positions by weight row (in position order), and one thread per (used row, column)
// adds that row's gradients in that order. The result is deterministic, and adds in
// the same order as the CPU path (which sums into the row one position at a time).
#include <algorithm>

#include "caffe/layers/embed_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

__global__ void EmbedForwardKernel(int64_t n, int64_t num_output, const float* indices,
                                   const float* weight, const float* bias, float* y) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t position = i / num_output, column = i % num_output;
    const int64_t row = static_cast<int64_t>(indices[position]);
    y[i] = weight[row * num_output + column] + (bias ? bias[column] : 0.f);
  }
}

// rows[q] is the q-th used weight row; its positions are positions[start[q] ..
// start[q + 1]).
__global__ void EmbedWeightGradientKernel(int64_t n, int64_t num_output, const int64_t* rows,
                                          const int64_t* start, const int64_t* positions,
                                          const float* dy, float* dweight) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const int64_t q = i / num_output, column = i % num_output;
    // Start from the row's current diff, as the host's axpy does: summing the batch
    // first and adding that once rounds differently when the diff is already nonzero
    // (iter_size > 1, or shared weights).
    float* out = dweight + rows[q] * num_output + column;
    float sum = *out;
    for (int64_t p = start[q]; p < start[q + 1]; ++p) sum += dy[positions[p] * num_output + column];
    *out = sum;
  }
}

// Term j of bias column c's gradient: the gradient of position j in that column.
struct EmbedBiasTerm {
  const float* dy;
  int64_t num_output;
  __device__ double operator()(int64_t column, int64_t j) const {
    return dy[j * num_output + column];
  }
};

}  // namespace

void EmbedLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t m = bottom[0]->count();
  const float* host_indices = bottom[0]->cpu_data();
  for (int64_t i = 0; i < m; ++i) IndexAt(host_indices, i);
  const int64_t count = top[0]->count();
  if (count == 0) return;
  EmbedForwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
      count, num_output_, bottom[0]->gpu_data(), blobs_[0]->gpu_data(),
      bias_term_ ? blobs_[1]->gpu_data() : nullptr, top[0]->mutable_gpu_data());
  CUDA_CHECK(cudaPeekAtLastError());
}

void EmbedLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                              const vector<Blob*>& bottom) {
  const int64_t m = bottom[0]->count();
  const float* dy = top[0]->gpu_diff();
  if (param_propagate_down(0) && m > 0) {
    // Group positions by row; a stable sort keeps each row's positions in order.
    const float* indices = bottom[0]->cpu_data();
    vector<int64_t> row_of(m);
    for (int64_t i = 0; i < m; ++i) row_of[i] = IndexAt(indices, i);
    vector<int64_t> order(m);
    for (int64_t i = 0; i < m; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row_of[a] < row_of[b]; });
    vector<int64_t> rows, start;
    for (int64_t p = 0; p < m; ++p) {
      if (p == 0 || row_of[order[p]] != row_of[order[p - 1]]) {
        rows.push_back(row_of[order[p]]);
        start.push_back(p);
      }
    }
    start.push_back(m);
    const int64_t used = static_cast<int64_t>(rows.size());
    // One buffer: rows (used), start (used + 1), positions (m).
    const size_t bytes = sizeof(int64_t) * (2 * used + 1 + m);
    if (!row_positions_ || row_positions_->size() < bytes) {
      row_positions_ = std::make_unique<SyncedMemory>(bytes);
    }
    int64_t* host = static_cast<int64_t*>(row_positions_->mutable_cpu_data());
    std::copy(rows.begin(), rows.end(), host);
    std::copy(start.begin(), start.end(), host + used);
    std::copy(order.begin(), order.end(), host + 2 * used + 1);
    const int64_t* device = static_cast<const int64_t*>(row_positions_->gpu_data());
    const int64_t n = used * num_output_;
    EmbedWeightGradientKernel<<<CudaGridBlocks(n), kCudaThreads>>>(
        n, num_output_, device, device + used, device + 2 * used + 1, dy,
        blobs_[0]->mutable_gpu_diff());
    CUDA_CHECK(cudaPeekAtLastError());
  }
  if (bias_term_ && param_propagate_down(1)) {
    SegmentSum(num_output_, m, EmbedBiasTerm{dy, num_output_}, 1.0, true,
               blobs_[1]->mutable_gpu_diff());
  }
  if (propagate_down[0]) math::gpu_set(m, 0.f, bottom[0]->mutable_gpu_diff());
}

}  // namespace caffe
