#include "caffe/layers/inner_product_layer.hpp"

#include "caffe/filler.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/mode_math.hpp"

namespace caffe {

void InnerProductLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const InnerProductParameter& p = layer_param_.inner_product_param();
  LAYER_REQUIRE(p.num_output() > 0) << "inner_product_param.num_output must be positive";
  N_ = static_cast<int>(p.num_output());
  bias_term_ = p.bias_term();
  transpose_ = p.transpose();
  const int axis = bottom[0]->CanonicalAxisIndex(p.axis());
  K_ = static_cast<int>(bottom[0]->count(axis));
  if (!blobs_.empty()) {
    // Weights came with the layer parameter; check they fit.
    LAYER_REQUIRE(blobs_.size() == (bias_term_ ? 2u : 1u))
        << "expected " << (bias_term_ ? 2 : 1) << " weight blob(s), found " << blobs_.size();
  } else {
    blobs_.push_back(std::make_shared<Blob>(transpose_ ? vector<int64_t>{K_, N_}
                                                       : vector<int64_t>{N_, K_}));
    FillBlob(p.weight_filler(), blobs_[0].get(), context().rng());
    if (bias_term_) {
      blobs_.push_back(std::make_shared<Blob>(vector<int64_t>{N_}));
      FillBlob(p.bias_filler(), blobs_[1].get(), context().rng());
    }
  }
  param_propagate_down_.assign(blobs_.size(), true);
}

void InnerProductLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const int axis = bottom[0]->CanonicalAxisIndex(layer_param_.inner_product_param().axis());
  const int64_t k = bottom[0]->count(axis);
  LAYER_REQUIRE(k == K_) << "bottom '" << bottom_name(0) << "' has "
                         << k << " inputs per example (shape " << ShapeToString(bottom[0]->shape())
                         << "), the weights expect " << K_;
  const vector<int64_t> wshape = transpose_ ? vector<int64_t>{K_, N_} : vector<int64_t>{N_, K_};
  LAYER_REQUIRE(blobs_[0]->shape() == wshape)
      << "weight shape " << ShapeToString(blobs_[0]->shape()) << ", expected "
      << ShapeToString(wshape);
  M_ = static_cast<int>(bottom[0]->count(0, axis));
  vector<int64_t> top_shape(bottom[0]->shape().begin(), bottom[0]->shape().begin() + axis);
  top_shape.push_back(N_);
  top[0]->Reshape(top_shape);
  // Refilled only when its size changes: rewriting it on every pass would also send it
  // to the device again on every pass in GPU mode.
  if (bias_term_ && bias_multiplier_.count() != M_) {
    bias_multiplier_.Reshape({M_});
    math::set(M_, 1.f, bias_multiplier_.mutable_cpu_data());
  }
}

void InnerProductLayer::ForwardOn(Mode mode, const vector<Blob*>& bottom,
                                  const vector<Blob*>& top) {
  const float* x = DataOn(mode, *bottom[0]);
  const float* w = DataOn(mode, *blobs_[0]);
  float* y = MutableDataOn(mode, top[0]);
  math::gemm(mode, math::NoTrans, transpose_ ? math::NoTrans : math::Trans, M_, N_, K_, 1.f, x,
             w, 0.f, y);
  if (bias_term_) {
    math::gemm(mode, math::NoTrans, math::NoTrans, M_, N_, 1, 1.f,
               DataOn(mode, bias_multiplier_), DataOn(mode, *blobs_[1]), 1.f, y);
  }
}

void InnerProductLayer::BackwardOn(Mode mode, const vector<Blob*>& top,
                                   const vector<bool>& propagate_down,
                                   const vector<Blob*>& bottom) {
  const float* dy = DiffOn(mode, *top[0]);
  const float* x = DataOn(mode, *bottom[0]);
  // Weight and bias gradients accumulate (beta = 1): shared weights and iter_size
  // both rely on it; the solver clears diffs before each step.
  if (param_propagate_down(0)) {
    if (transpose_) {
      math::gemm(mode, math::Trans, math::NoTrans, K_, N_, M_, 1.f, x, dy, 1.f,
                 MutableDiffOn(mode, blobs_[0].get()));
    } else {
      math::gemm(mode, math::Trans, math::NoTrans, N_, K_, M_, 1.f, dy, x, 1.f,
                 MutableDiffOn(mode, blobs_[0].get()));
    }
  }
  if (bias_term_ && param_propagate_down(1)) {
    math::gemv(mode, math::Trans, M_, N_, 1.f, dy, DataOn(mode, bias_multiplier_), 1.f,
               MutableDiffOn(mode, blobs_[1].get()));
  }
  if (propagate_down[0]) {
    math::gemm(mode, math::NoTrans, transpose_ ? math::Trans : math::NoTrans, M_, K_, N_, 1.f,
               dy, DataOn(mode, *blobs_[0]), 0.f, MutableDiffOn(mode, bottom[0]));
  }
}

void InnerProductLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ForwardOn(Mode::CPU, bottom, top);
}

void InnerProductLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  BackwardOn(Mode::CPU, top, propagate_down, bottom);
}

#ifdef USE_CUDA
void InnerProductLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  ForwardOn(Mode::GPU, bottom, top);
}

void InnerProductLayer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                     const vector<Blob*>& bottom) {
  BackwardOn(Mode::GPU, top, propagate_down, bottom);
}
#endif

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
