// Device path of EltwiseLayer; the same operations, in the same order, as the CPU path.
#include "caffe/layers/eltwise_layer.hpp"
#include "caffe/util/device_kernels.cuh"
#include "caffe/util/math_functions.hpp"

namespace caffe {

namespace {

// MAX, first two bottoms: the running maximum and which bottom holds it. A later
// bottom wins only when strictly greater, so ties go to the first bottom.
__global__ void MaxOfFirstTwoKernel(int64_t n, const float* a, const float* b, float* y,
                                    float* max_index) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    const bool second = b[i] > a[i];
    y[i] = second ? b[i] : a[i];
    max_index[i] = second ? 1.f : 0.f;
  }
}

__global__ void MaxUpdateKernel(int64_t n, const float* x, float index, float* y,
                                float* max_index) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    if (x[i] > y[i]) {
      y[i] = x[i];
      max_index[i] = index;
    }
  }
}

__global__ void MaxBackwardKernel(int64_t n, const float* dy, const float* max_index,
                                  float index, float* dx) {
  CUDA_GRID_STRIDE_LOOP(i, n) {
    dx[i] = max_index[i] == index ? dy[i] : 0.f;
  }
}

}  // namespace

void EltwiseLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = top[0]->count();
  float* y = top[0]->mutable_gpu_data();
  switch (op_) {
    case EltwiseParameter::SUM:
      math::gpu_scale(count, coeffs_[0], bottom[0]->gpu_data(), y);
      for (size_t b = 1; b < bottom.size(); ++b) {
        math::gpu_axpy(count, coeffs_[b], bottom[b]->gpu_data(), y);
      }
      break;
    case EltwiseParameter::PROD:
      math::gpu_mul(count, bottom[0]->gpu_data(), bottom[1]->gpu_data(), y);
      for (size_t b = 2; b < bottom.size(); ++b) math::gpu_mul(count, y, bottom[b]->gpu_data(), y);
      break;
    case EltwiseParameter::MAX: {
      max_index_gpu_.ReshapeLike(*top[0]);
      float* max_index = max_index_gpu_.mutable_gpu_data();
      MaxOfFirstTwoKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
          count, bottom[0]->gpu_data(), bottom[1]->gpu_data(), y, max_index);
      CUDA_CHECK(cudaPeekAtLastError());
      for (size_t b = 2; b < bottom.size(); ++b) {
        MaxUpdateKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
            count, bottom[b]->gpu_data(), static_cast<float>(b), y, max_index);
        CUDA_CHECK(cudaPeekAtLastError());
      }
      break;
    }
    default:
      Fail() << "unknown eltwise operation " << static_cast<int>(op_);
  }
}

void EltwiseLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  const int64_t count = top[0]->count();
  const float* dy = top[0]->gpu_diff();
  for (size_t b = 0; b < bottom.size(); ++b) {
    if (!propagate_down[b]) continue;
    float* dx = bottom[b]->mutable_gpu_diff();
    switch (op_) {
      case EltwiseParameter::SUM:
        math::gpu_scale(count, coeffs_[b], dy, dx);
        break;
      case EltwiseParameter::PROD:
        if (stable_prod_grad_) {
          // dy times every other bottom, multiplied in bottom order as on the CPU.
          const float* partial = dy;
          for (size_t other = 0; other < bottom.size(); ++other) {
            if (other == b) continue;
            math::gpu_mul(count, partial, bottom[other]->gpu_data(), dx);
            partial = dx;
          }
        } else {
          math::gpu_div(count, top[0]->gpu_data(), bottom[b]->gpu_data(), dx);
          math::gpu_mul(count, dx, dy, dx);
        }
        break;
      case EltwiseParameter::MAX:
        MaxBackwardKernel<<<CudaGridBlocks(count), kCudaThreads>>>(
            count, dy, max_index_gpu_.gpu_data(), static_cast<float>(b), dx);
        CUDA_CHECK(cudaPeekAtLastError());
        break;
      default:
        Fail() << "unknown eltwise operation " << static_cast<int>(op_);
    }
  }
}

}  // namespace caffe
