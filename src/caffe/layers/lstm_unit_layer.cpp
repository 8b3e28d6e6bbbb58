#include "caffe/layers/lstm_unit_layer.hpp"

#include "caffe/layer_factory.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

void LSTMUnitLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const Blob& c_prev = *bottom[0];
  const Blob& gates = *bottom[1];
  const Blob& cont = *bottom[2];
  LAYER_REQUIRE(c_prev.num_axes() == 3 && c_prev.shape(0) == 1)
      << "bottom '" << bottom_name(0) << "' (the previous cell) must be 1 x N x D, found shape "
      << ShapeToString(c_prev.shape());
  const int64_t streams = c_prev.shape(1);
  hidden_dim_ = c_prev.shape(2);
  const vector<int64_t> gates_shape{1, streams, 4 * hidden_dim_};
  LAYER_REQUIRE(gates.shape() == gates_shape)
      << "bottom '" << bottom_name(1)
      << "' (the gate inputs) must be 1 x N x 4D = " << ShapeToString(gates_shape)
      << " for bottom '" << bottom_name(0) << "' of shape " << ShapeToString(c_prev.shape())
      << ", found shape " << ShapeToString(gates.shape());
  const vector<int64_t> cont_shape{1, streams};
  LAYER_REQUIRE(cont.shape() == cont_shape)
      << "bottom '" << bottom_name(2)
      << "' (the continuation indicators) must be 1 x N = " << ShapeToString(cont_shape)
      << ", found shape " << ShapeToString(cont.shape());
  for (int t = 0; t < 2; ++t) {
    for (int b = 0; b < 3; ++b) {
      // Backward recomputes the gates from the bottoms, which a top written over them
      // would have destroyed.
      LAYER_REQUIRE(top[t] != bottom[b])
          << "cannot run in place (top '" << top_name(t) << "' is bottom '" << bottom_name(b)
          << "'); give the top its own name";
    }
  }
  top[0]->ReshapeLike(c_prev);
  top[1]->ReshapeLike(c_prev);
}

void LSTMUnitLayer::RefuseGradientToCont(const vector<bool>& propagate_down) const {
  LAYER_REQUIRE(!propagate_down[2])
      << "cannot give bottom '" << bottom_name(2)
      << "' (the continuation indicators) a gradient; set propagate_down: false for it";
}

void LSTMUnitLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const LSTMUnitForward op{bottom[0]->cpu_data(),      bottom[1]->cpu_data(),
                           bottom[2]->cpu_data(),      top[0]->mutable_cpu_data(),
                           top[1]->mutable_cpu_data(), hidden_dim_};
  ParallelFor(top[0]->count(), [&op](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) op(e);
  });
}

void LSTMUnitLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                 const vector<Blob*>& bottom) {
  RefuseGradientToCont(propagate_down);
  if (!propagate_down[0] && !propagate_down[1]) return;
  const LSTMUnitBackward op{bottom[0]->cpu_data(),
                            bottom[1]->cpu_data(),
                            bottom[2]->cpu_data(),
                            top[0]->cpu_diff(),
                            top[1]->cpu_diff(),
                            propagate_down[0] ? bottom[0]->mutable_cpu_diff() : nullptr,
                            propagate_down[1] ? bottom[1]->mutable_cpu_diff() : nullptr,
                            hidden_dim_};
  ParallelFor(top[0]->count(), [&op](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) op(e);
  });
}

REGISTER_LAYER_CLASS(LSTMUnit);

}  // namespace caffe
