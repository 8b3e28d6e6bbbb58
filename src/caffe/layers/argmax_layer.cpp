#include "caffe/layers/argmax_layer.hpp"

#include <algorithm>
#include <functional>

#include "caffe/layer_factory.hpp"

namespace caffe {

void ArgMaxLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const ArgMaxParameter& p = layer_param_.argmax_param();
  out_max_val_ = p.out_max_val();
  top_k_ = p.top_k();
  has_axis_ = p.has_axis();
  LAYER_REQUIRE(top_k_ >= 1) << "argmax_param.top_k must be at least 1, found " << top_k_;
}

void ArgMaxLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& in = *bottom[0];
  const int num_axes = in.num_axes();
  vector<int64_t> top_shape;
  if (has_axis_) {
    const int axis = layer_param_.argmax_param().axis();
    LAYER_REQUIRE(axis >= -num_axes && axis < num_axes)
        << "argmax_param.axis " << axis << " is out of range for bottom '" << bottom_name(0)
        << "' of shape " << ShapeToString(in.shape());
    axis_ = in.CanonicalAxisIndex(axis);
    LAYER_REQUIRE(in.shape(axis_) >= top_k_)
        << "top_k " << top_k_ << " exceeds the " << in.shape(axis_) << " entries along axis "
        << axis_ << " of bottom '" << bottom_name(0) << "' (" << ShapeToString(in.shape()) << ")";
    top_shape = in.shape();
    top_shape[axis_] = top_k_;
  } else {
    LAYER_REQUIRE(num_axes >= 1 && in.count(1) >= top_k_)
        << "top_k " << top_k_ << " exceeds the entries per example of bottom '"
        << bottom_name(0) << "' (" << ShapeToString(in.shape()) << ")";
    top_shape.assign(std::max(num_axes, 3), 1);
    top_shape[0] = in.shape(0);
    top_shape[1] = out_max_val_ ? 2 : 1;
    top_shape[2] = top_k_;
  }
  top[0]->Reshape(top_shape);
}

void ArgMaxLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& in = *bottom[0];
  const float* x = in.cpu_data();
  float* y = top[0]->mutable_cpu_data();
  // The searched dimension has `dim` entries `stride` apart; `num` such searches.
  const int64_t dim = has_axis_ ? in.shape(axis_) : in.count(1);
  const int64_t stride = has_axis_ ? in.count(axis_ + 1) : 1;
  const int64_t num = dim == 0 ? 0 : in.count() / dim;
  ResizeScratch(&candidates_, dim, "the candidate list");
  for (int64_t i = 0; i < num; ++i) {
    const int64_t outer = i / stride, inner = i % stride;
    const float* row = x + outer * dim * stride + inner;
    for (int64_t j = 0; j < dim; ++j) candidates_[j] = {row[j * stride], j};
    std::partial_sort(candidates_.begin(), candidates_.begin() + top_k_, candidates_.end(),
                      std::greater<std::pair<float, int64_t>>());
    for (int64_t k = 0; k < top_k_; ++k) {
      const std::pair<float, int64_t>& best = candidates_[k];
      if (has_axis_) {
        // Along an axis the top holds values instead of indices when out_max_val is set.
        y[(outer * top_k_ + k) * stride + inner] =
            out_max_val_ ? best.first : static_cast<float>(best.second);
      } else if (out_max_val_) {
        y[(2 * i) * top_k_ + k] = static_cast<float>(best.second);
        y[(2 * i + 1) * top_k_ + k] = best.first;
      } else {
        y[i * top_k_ + k] = static_cast<float>(best.second);
      }
    }
  }
}

void ArgMaxLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  LAYER_REQUIRE(!propagate_down[0])
      << "ArgMax has no gradient; bottom '" << bottom_name(0)
      << "' cannot receive one (set propagate_down: false or keep its top out of the loss)";
}

REGISTER_LAYER_CLASS(ArgMax);

}  // namespace caffe
