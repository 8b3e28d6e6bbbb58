#include "caffe/layers/reduction_layer.hpp"

#include <cmath>

#include "caffe/layer_factory.hpp"

namespace caffe {

void ReductionLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ReductionParameter& p = layer_param_.reduction_param();
  const int num_axes = bottom[0]->num_axes();
  // axis may equal num_axes only for a scalar bottom, where nothing is reduced.
  LAYER_REQUIRE((p.axis() >= -num_axes && p.axis() < num_axes) || (num_axes == 0 && p.axis() == 0))
      << "reduction_param.axis " << p.axis() << " is out of range for bottom '"
      << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape());
  const int axis = p.axis() < 0 ? p.axis() + num_axes : p.axis();
  num_ = bottom[0]->count(0, axis);
  dim_ = bottom[0]->count(axis);
  top[0]->Reshape(vector<int64_t>(bottom[0]->shape().begin(), bottom[0]->shape().begin() + axis));
  coeff_ = p.coeff();
  if (p.operation() == ReductionParameter::MEAN && dim_ > 0) coeff_ /= static_cast<float>(dim_);
}

void ReductionLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ReductionParameter::ReductionOp op = layer_param_.reduction_param().operation();
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (int64_t i = 0; i < num_; ++i) {
    const float* row = x + i * dim_;
    double sum = 0;
    switch (op) {
      case ReductionParameter::SUM:
      case ReductionParameter::MEAN:
        for (int64_t j = 0; j < dim_; ++j) sum += row[j];
        break;
      case ReductionParameter::ASUM:
        for (int64_t j = 0; j < dim_; ++j) sum += std::fabs(row[j]);
        break;
      case ReductionParameter::SUMSQ:
        for (int64_t j = 0; j < dim_; ++j) sum += double(row[j]) * row[j];
        break;
    }
    y[i] = static_cast<float>(coeff_ * sum);
  }
}

void ReductionLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const ReductionParameter::ReductionOp op = layer_param_.reduction_param().operation();
  const float* x = bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  for (int64_t i = 0; i < num_; ++i) {
    const float g = coeff_ * dy[i];
    const float* row = x + i * dim_;
    float* drow = dx + i * dim_;
    switch (op) {
      case ReductionParameter::SUM:
      case ReductionParameter::MEAN:
        for (int64_t j = 0; j < dim_; ++j) drow[j] = g;
        break;
      case ReductionParameter::ASUM:
        for (int64_t j = 0; j < dim_; ++j) drow[j] = row[j] > 0 ? g : (row[j] < 0 ? -g : 0.f);
        break;
      case ReductionParameter::SUMSQ:
        for (int64_t j = 0; j < dim_; ++j) drow[j] = 2 * g * row[j];
        break;
    }
  }
}

REGISTER_LAYER_CLASS(Reduction);

}  // namespace caffe
