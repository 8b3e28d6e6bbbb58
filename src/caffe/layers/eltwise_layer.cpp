#include "caffe/layers/eltwise_layer.hpp"

#include <algorithm>

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void EltwiseLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const EltwiseParameter& p = layer_param_.eltwise_param();
  op_ = p.operation();
  stable_prod_grad_ = p.stable_prod_grad();
  const int num_coeffs = p.coeff_size();
  LAYER_REQUIRE(num_coeffs == 0 || op_ == EltwiseParameter::SUM)
      << "eltwise_param.coeff applies to operation SUM only";
  LAYER_REQUIRE(num_coeffs == 0 || num_coeffs == static_cast<int>(bottom.size()))
      << "eltwise_param.coeff must be given once per bottom (" << bottom.size()
      << "), found " << num_coeffs;
  coeffs_.assign(bottom.size(), 1.f);
  for (int i = 0; i < num_coeffs; ++i) coeffs_[i] = p.coeff(i);
}

void EltwiseLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 1; i < bottom.size(); ++i) {
    LAYER_REQUIRE(bottom[i]->shape() == bottom[0]->shape())
        << "all bottoms must have the same shape: bottom '" << bottom_name(0) << "' is "
        << ShapeToString(bottom[0]->shape()) << " but bottom '" << bottom_name(int(i))
        << "' is " << ShapeToString(bottom[i]->shape());
  }
  // Backward reads top diff for every bottom after writing the first bottom diff.
  for (size_t i = 0; i < bottom.size(); ++i) {
    LAYER_REQUIRE(bottom[i] != top[0])
        << "cannot run in place (top '" << top_name(0) << "' is bottom '"
        << bottom_name(int(i)) << "')";
  }
  top[0]->ReshapeLike(*bottom[0]);
  if (op_ == EltwiseParameter::MAX) {
    ResizeScratch(&max_index_, top[0]->count(), "the MAX index");
  }
}

void EltwiseLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int64_t count = top[0]->count();
  float* y = top[0]->mutable_cpu_data();
  switch (op_) {
    case EltwiseParameter::SUM: {
      vector<const float*> inputs;
      for (const Blob* b : bottom) inputs.push_back(b->cpu_data());
      const float* coeffs = coeffs_.data();
      const float* const* x = inputs.data();
      const size_t num_inputs = inputs.size();
      // All inputs piece by piece, so that y's piece stays in L1 between them.
      ParallelFor(count, [=](int64_t begin, int64_t end) {
        for (int64_t start = begin; start < end; start += kL1PieceElements) {
          const int64_t stop = std::min(end, start + kL1PieceElements);
          for (int64_t i = start; i < stop; ++i) y[i] = coeffs[0] * x[0][i];
          for (size_t b = 1; b < num_inputs; ++b) {
            const float c = coeffs[b];
            const float* xb = x[b];
            for (int64_t i = start; i < stop; ++i) y[i] += c * xb[i];
          }
        }
      });
      break;
    }
    case EltwiseParameter::PROD:
      math::mul(count, bottom[0]->cpu_data(), bottom[1]->cpu_data(), y);
      for (size_t i = 2; i < bottom.size(); ++i) math::mul(count, y, bottom[i]->cpu_data(), y);
      break;
    case EltwiseParameter::MAX: {
      math::copy(count, bottom[0]->cpu_data(), y);
      std::fill(max_index_.begin(), max_index_.end(), 0);
      for (size_t b = 1; b < bottom.size(); ++b) {
        const float* x = bottom[b]->cpu_data();
        int* max_index = max_index_.data();
        ParallelFor(count, [=](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            if (x[i] > y[i]) {
              y[i] = x[i];
              max_index[i] = static_cast<int>(b);
            }
          }
        });
      }
      break;
    }
    default:
      Fail() << "unknown eltwise operation " << static_cast<int>(op_);
  }
}

void EltwiseLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  const int64_t count = top[0]->count();
  const float* dy = top[0]->cpu_diff();
  if (op_ == EltwiseParameter::SUM) {
    // Every bottom's diff from one read of dy, piece by piece.
    vector<float*> outputs;
    vector<float> factors;
    for (size_t b = 0; b < bottom.size(); ++b) {
      if (!propagate_down[b]) continue;
      outputs.push_back(bottom[b]->mutable_cpu_diff());
      factors.push_back(coeffs_[b]);
    }
    float* const* dx = outputs.data();
    const float* c = factors.data();
    const size_t num_outputs = outputs.size();
    ParallelFor(count, [=](int64_t begin, int64_t end) {
      for (int64_t start = begin; start < end; start += kL1PieceElements) {
        const int64_t stop = std::min(end, start + kL1PieceElements);
        for (size_t o = 0; o < num_outputs; ++o) {
          float* out = dx[o];
          const float f = c[o];
          for (int64_t i = start; i < stop; ++i) out[i] = f * dy[i];
        }
      }
    });
    return;
  }
  for (size_t b = 0; b < bottom.size(); ++b) {
    if (!propagate_down[b]) continue;
    float* dx = bottom[b]->mutable_cpu_diff();
    switch (op_) {
      case EltwiseParameter::PROD:
        if (stable_prod_grad_) {
          math::copy(count, dy, dx);
          for (size_t other = 0; other < bottom.size(); ++other) {
            if (other != b) math::mul(count, dx, bottom[other]->cpu_data(), dx);
          }
        } else {
          math::div(count, top[0]->cpu_data(), bottom[b]->cpu_data(), dx);
          math::mul(count, dx, dy, dx);
        }
        break;
      case EltwiseParameter::MAX: {
        const int* max_index = max_index_.data();
        ParallelFor(count, [=](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) dx[i] = max_index[i] == int(b) ? dy[i] : 0.f;
        });
        break;
      }
      default:
        Fail() << "unknown eltwise operation " << static_cast<int>(op_);
    }
  }
}

REGISTER_LAYER_CLASS(Eltwise);

}  // namespace caffe
