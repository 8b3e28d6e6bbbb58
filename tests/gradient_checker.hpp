// Finite-difference check of a layer's Backward against its Forward, shared by every
// layer test. The objective is a fixed random weighting of all top elements,
// L = sum_i w_i * top_i, so every top element's gradient path is exercised at once;
// each bottom (and weight) element is perturbed by +-stepsize and the central
// difference of L is compared with the analytic gradient.
#ifndef CAFFE_TESTS_GRADIENT_CHECKER_HPP_
#define CAFFE_TESTS_GRADIENT_CHECKER_HPP_

#include <vector>

#include "caffe/blob.hpp"
#include "caffe/layer.hpp"

namespace caffe {

class GradientChecker {
 public:
  // A point within kink_range of kink (in the bottom value) is skipped: functions
  // like ReLU are not differentiable there.
  GradientChecker(float stepsize, float threshold, uint64_t seed = 1701, float kink = 0.f,
                  float kink_range = -1.f)
      : stepsize_(stepsize), threshold_(threshold), seed_(seed), kink_(kink),
        kink_range_(kink_range) {}

  // Checks the gradient w.r.t. every bottom (or only `check_bottom` when >= 0) and,
  // when check_params is set, every weight blob whose param_propagate_down is on.
  // Calls layer->SetUp itself.
  void CheckGradient(Layer* layer, const std::vector<Blob*>& bottom,
                     const std::vector<Blob*>& top, int check_bottom = -1,
                     bool check_params = true);

  // Same, but only through top element `top_index` of top blob `top_id` (useful for
  // layers whose tops overlap, and to bound cost on large layers).
  void CheckGradientSingle(Layer* layer, const std::vector<Blob*>& bottom,
                           const std::vector<Blob*>& top, int check_bottom, int top_id,
                           int64_t top_index, bool check_params = true);

  // Number of elements compared in the last call (so a test can assert coverage).
  int64_t checked() const { return checked_; }

 private:
  void Run(Layer* layer, const std::vector<Blob*>& bottom, const std::vector<Blob*>& top,
           int check_bottom, int top_id, int64_t top_index, bool check_params);
  double Objective(Layer* layer, const std::vector<Blob*>& bottom,
                   const std::vector<Blob*>& top, const std::vector<std::vector<float>>& weights);

  float stepsize_;
  float threshold_;
  uint64_t seed_;
  float kink_;
  float kink_range_;
  int64_t checked_ = 0;
};

}  // namespace caffe

#endif  // CAFFE_TESTS_GRADIENT_CHECKER_HPP_
