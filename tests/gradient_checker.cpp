#include "gradient_checker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace caffe {

double GradientChecker::Objective(Layer* layer, const std::vector<Blob*>& bottom,
                                  const std::vector<Blob*>& top,
                                  const std::vector<std::vector<float>>& weights) {
  // Re-seed so that stochastic layers (dropout) draw the same mask every time.
  layer->context().Seed(seed_);
  layer->Forward(bottom, top);
  double total = 0;
  for (size_t t = 0; t < top.size(); ++t) {
    const float* data = top[t]->cpu_data();
    for (int64_t i = 0; i < top[t]->count(); ++i) total += double(weights[t][i]) * data[i];
  }
  return total;
}

void GradientChecker::CheckGradient(Layer* layer, const std::vector<Blob*>& bottom,
                                    const std::vector<Blob*>& top, int check_bottom,
                                    bool check_params) {
  Run(layer, bottom, top, check_bottom, -1, -1, check_params);
}

void GradientChecker::CheckGradientSingle(Layer* layer, const std::vector<Blob*>& bottom,
                                          const std::vector<Blob*>& top, int check_bottom,
                                          int top_id, int64_t top_index, bool check_params) {
  Run(layer, bottom, top, check_bottom, top_id, top_index, check_params);
}

void GradientChecker::Run(Layer* layer, const std::vector<Blob*>& bottom,
                          const std::vector<Blob*>& top, int check_bottom, int top_id,
                          int64_t top_index, bool check_params) {
  layer->SetUp(bottom, top);
  checked_ = 0;
  // The blobs under test: weights first, then the chosen bottoms.
  std::vector<Blob*> blobs;
  std::vector<bool> is_bottom;
  if (check_params) {
    for (size_t i = 0; i < layer->blobs().size(); ++i) {
      if (layer->param_propagate_down(static_cast<int>(i))) {
        blobs.push_back(layer->blobs()[i].get());
        is_bottom.push_back(false);
      }
    }
  }
  std::vector<bool> propagate_down(bottom.size(), check_bottom < 0);
  for (size_t i = 0; i < bottom.size(); ++i) {
    if (check_bottom < 0 || static_cast<int>(i) == check_bottom) {
      propagate_down[i] = true;
      blobs.push_back(bottom[i]);
      is_bottom.push_back(true);
    }
  }
  ASSERT_FALSE(blobs.empty()) << "nothing to check";

  // Objective weights: random in [-1, 1], zero outside the selected top element.
  layer->context().Seed(seed_);
  layer->Forward(bottom, top);
  std::mt19937_64 rng(seed_ + 1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<std::vector<float>> weights(top.size());
  for (size_t t = 0; t < top.size(); ++t) {
    weights[t].assign(top[t]->count(), 0.f);
    for (int64_t i = 0; i < top[t]->count(); ++i) {
      const bool selected = top_id < 0 || (static_cast<int>(t) == top_id &&
                                           (top_index < 0 || i == top_index));
      if (selected) weights[t][i] = dist(rng);
    }
  }

  // Analytic gradients.
  for (Blob* blob : blobs) std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.f);
  for (size_t t = 0; t < top.size(); ++t) {
    std::copy(weights[t].begin(), weights[t].end(), top[t]->mutable_cpu_diff());
  }
  layer->Backward(top, propagate_down, bottom);
  std::vector<std::vector<float>> analytic(blobs.size());
  for (size_t b = 0; b < blobs.size(); ++b) {
    analytic[b].assign(blobs[b]->cpu_diff(), blobs[b]->cpu_diff() + blobs[b]->count());
  }

  for (size_t b = 0; b < blobs.size(); ++b) {
    Blob* blob = blobs[b];
    for (int64_t i = 0; i < blob->count(); ++i) {
      const float original = blob->cpu_data()[i];
      if (kink_range_ > 0 && std::fabs(original - kink_) < kink_range_) continue;
      blob->mutable_cpu_data()[i] = original + stepsize_;
      const double plus = Objective(layer, bottom, top, weights);
      blob->mutable_cpu_data()[i] = original - stepsize_;
      const double minus = Objective(layer, bottom, top, weights);
      blob->mutable_cpu_data()[i] = original;
      const double numeric = (plus - minus) / (2.0 * stepsize_);
      const double computed = analytic[b][i];
      const double scale = std::max({std::fabs(numeric), std::fabs(computed), 1.0});
      EXPECT_NEAR(computed, numeric, threshold_ * scale)
          << (is_bottom[b] ? "bottom" : "weight") << " blob " << b << " element " << i
          << " of " << blob->count();
      ++checked_;
    }
  }
}

}  // namespace caffe
