#include "caffe/sync/host_residual_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "caffe/sync/host_passes.hpp"
#include "caffe/sync/shared_random.hpp"
#include "caffe/sync/top_k.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

namespace {

class HostBuffer : public KernelBuffer {
 public:
  void Reserve(size_t bytes) override {
    if (bytes > bytes_.size()) bytes_.resize(bytes);
  }
  void* data() override { return bytes_.data(); }

 private:
  vector<char> bytes_;
};

}  // namespace

std::unique_ptr<KernelBuffer> HostResidualKernels::NewBuffer() const {
  return std::make_unique<HostBuffer>();
}

void HostResidualKernels::CopyToHost(const void* from, size_t bytes, void* host) const {
  if (bytes > 0 && from != host) std::memcpy(host, from, bytes);
}

void HostResidualKernels::CopyFromHost(const void* host, size_t bytes, void* to) const {
  if (bytes > 0 && host != to) std::memcpy(to, host, bytes);
}

void HostResidualKernels::Copy(const void* from, size_t bytes, void* to) const {
  if (bytes > 0 && from != to) std::memcpy(to, from, bytes);
}

void HostResidualKernels::ClipAndAccumulate(const vector<Blob*>& params, float clip,
                                            float momentum) {
  vector<size_t> all(params.size());
  for (size_t b = 0; b < all.size(); ++b) all[b] = b;
  ClipAndAccumulateBucket(params, all, clip, momentum, /*first=*/true);
}

bool HostResidualKernels::ClipAndAccumulateBucket(const vector<Blob*>& params,
                                                  const vector<size_t>& blobs, float clip,
                                                  float momentum, bool first) {
  if (first) nonfinite_blob_ = -1;
  bool all_finite = true;
  for (size_t b : blobs) {
    Blob* p = params[b];
    const int64_t n = p->count();
    float* g = p->mutable_cpu_diff();
    if (clip > 0) {
      // Local clipping per blob: keeps one rank's outlier gradient from dominating
      // the residual it will carry for many steps.
      const float norm = std::sqrt(math::dot(n, g, g));
      if (norm > clip) math::scal(n, clip / norm, g);
    }
    float* v = state_.residual[b].data();
    // The finiteness test rides along: a NaN that stays in this rank's residual must
    // stop every rank, not wait unsent forever.
    std::atomic<bool> finite{true};
    if (!state_.velocity[b].empty()) {
      float* u = state_.velocity[b].data();
      ParallelFor(n, [=, &finite](int64_t begin, int64_t end) {
        bool ok = true;
        for (int64_t i = begin; i < end; ++i) {
          u[i] = momentum * u[i] + g[i];
          v[i] += u[i];
          ok &= std::isfinite(v[i]);
        }
        if (!ok) finite = false;
      });
    } else {
      ParallelFor(n, [=, &finite](int64_t begin, int64_t end) {
        if (!AccumulateChecked(g + begin, end - begin, v + begin)) finite = false;
      });
    }
    if (!finite) {
      all_finite = false;
      if (nonfinite_blob_ < 0) nonfinite_blob_ = static_cast<int>(b);
    }
  }
  return all_finite;
}

void HostResidualKernels::CopySelected(size_t b, const ResidualSelection& selection,
                                       float* out) const {
  const float* v = state_.residual[b].data();
  if (selection.all) {
    std::memcpy(out, v, sizeof(float) * state_.residual[b].size());
    return;
  }
  const int32_t* index = selection.indices.data();
  for (size_t j = 0; j < selection.indices.size(); ++j) out[j] = v[index[j]];
}

float* HostResidualKernels::GatherSelected(const vector<ResidualSelection>& selections,
                                           bool keep_local) {
  int64_t total = 0;
  for (size_t b = 0; b < selections.size(); ++b) {
    total += selections[b].all ? count(b) : static_cast<int64_t>(selections[b].indices.size());
  }
  values_.resize(total + 1);
  values_[total] = nonfinite_blob_ >= 0 ? 1.f : 0.f;
  int64_t pos = 0;
  for (size_t b = 0; b < selections.size(); ++b) {
    const float* v = state_.residual[b].data();
    if (selections[b].all) {
      std::memcpy(values_.data() + pos, v, sizeof(float) * count(b));
      pos += count(b);
    } else {
      const vector<int32_t>& indices = selections[b].indices;
      const int32_t* index = indices.data();
      float* out = values_.data() + pos;
      ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) out[j] = v[index[j]];
      });
      pos += static_cast<int64_t>(indices.size());
    }
  }
  if (keep_local) local_values_.assign(values_.begin(), values_.begin() + total);
  return values_.data();
}

bool HostResidualKernels::AllFinite(const float* values, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    if (!std::isfinite(values[j])) return false;
  }
  return true;
}

void HostResidualKernels::ScatterSelected(size_t b, const ResidualSelection& selection,
                                          Blob* param, const float* values, float scale) {
  const int64_t n = param->count();
  float* diff = param->mutable_cpu_diff();
  if (selection.all) {
    ParallelFor(n, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) diff[i] = values[i] * scale;
    });
    return;
  }
  std::fill(diff, diff + n, 0.f);
  const int32_t* index = selection.indices.data();
  ParallelFor(static_cast<int64_t>(selection.indices.size()), [=](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) diff[index[j]] = values[j] * scale;
  });
}

void HostResidualKernels::ClearSelected(size_t b, const ResidualSelection& selection,
                                        int32_t iter) {
  if (selection.all) {
    std::fill(state_.residual[b].begin(), state_.residual[b].end(), 0.f);
    std::fill(state_.last_sent[b].begin(), state_.last_sent[b].end(), iter);
    return;
  }
  ClearAt(b, selection.indices.data(), static_cast<int64_t>(selection.indices.size()), iter);
}

int64_t HostResidualKernels::LimitSelected(size_t b, const ResidualSelection& selection,
                                           Blob* param, float scale, const float* local) {
  const int64_t n = param->count();
  const float* w = param->cpu_data();
  const float rms = static_cast<float>(std::sqrt(MeanSquare(w, n)));
  float* diff = param->mutable_cpu_diff();
  float* v = state_.residual[b].data();
  const vector<int32_t>& indices = selection.indices;
  int64_t capped = 0;
  for (size_t j = 0; j < indices.size(); ++j) {
    const int32_t i = indices[j];
    const float cap = scale * (std::fabs(w[i]) + rms);
    const float applied = diff[i];
    if (std::fabs(applied) <= cap) continue;
    // The rest goes back to the ranks' residuals in proportion to what each sent:
    // every rank keeps the same fraction of its own value, so their sum is exactly
    // N x (applied - cap) and conservation holds.
    const float keep = 1.f - cap / std::fabs(applied);
    diff[i] = std::copysign(cap, applied);
    v[i] = local[j] * keep;
    ++capped;
  }
  return capped;
}

void HostResidualKernels::AddSelected(size_t b, const ResidualSelection& selection,
                                      const float* values) {
  float* v = state_.residual[b].data();
  if (selection.all) {
    math::axpy(count(b), 1.f, values, v);
    return;
  }
  for (size_t j = 0; j < selection.indices.size(); ++j) v[selection.indices[j]] += values[j];
}

void HostResidualKernels::Subtract(size_t b, const float* values) {
  math::axpy(count(b), -1.f, values, state_.residual[b].data());
}

void HostResidualKernels::RecordKnownImportance(size_t b, const ResidualSelection& selection,
                                                const Blob& param, float epsilon,
                                                bool divide_by_weight) {
  float* known = state_.known_importance[b].data();
  const float* diff = param.cpu_diff();
  const float* w = param.cpu_data();
  auto record = [=](int64_t i) {
    known[i] =
        divide_by_weight ? std::fabs(diff[i]) / (std::fabs(w[i]) + epsilon) : std::fabs(diff[i]);
  };
  if (selection.all) {
    for (int64_t i = 0; i < param.count(); ++i) record(i);
  } else {
    for (int32_t i : selection.indices) record(i);
  }
}

int64_t HostResidualKernels::SelectLargest(size_t b, int64_t k, int32_t* indices) {
  const int64_t n = count(b);
  magnitude_.resize(n);
  const float* v = state_.residual[b].data();
  for (int64_t i = 0; i < n; ++i) magnitude_[i] = std::fabs(v[i]);
  const vector<int32_t> chosen = TopKIndices(magnitude_.data(), n, k);
  std::copy(chosen.begin(), chosen.end(), indices);
  return static_cast<int64_t>(chosen.size());
}

void HostResidualKernels::Gather(size_t b, const int32_t* indices, int64_t count, float* values) {
  const float* v = state_.residual[b].data();
  for (int64_t j = 0; j < count; ++j) values[j] = v[indices[j]];
}

void HostResidualKernels::ScatterAdd(const float* values, const int32_t* indices, int64_t count,
                                     float scale, Blob* param) {
  float* diff = param->mutable_cpu_diff();
  for (int64_t j = 0; j < count; ++j) diff[indices[j]] += values[j] * scale;
}

void HostResidualKernels::ClearAt(size_t b, const int32_t* indices, int64_t count, int32_t iter) {
  float* v = state_.residual[b].data();
  float* u = state_.velocity[b].empty() ? nullptr : state_.velocity[b].data();
  int32_t* last = state_.last_sent[b].data();
  // Indices are distinct, so threads never write the same element.
  ParallelFor(count, [=](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      v[indices[j]] = 0;
      last[indices[j]] = iter;
    }
    if (u) {
      for (int64_t j = begin; j < end; ++j) u[indices[j]] = 0;
    }
  });
}

vector<int32_t> HostResidualKernels::StochasticDraw(size_t b, int64_t iter, double expected,
                                                    uint64_t stream) {
  vector<int32_t> out;
  const int64_t n = count(b);
  if (expected <= 0 || n == 0) return out;
  const int32_t* last = state_.last_sent[b].data();
  const float* known = state_.known_importance[b].data();
  // Weight of coordinate i: (age_i + 1) * (m_i + mean m), with age_i + 1 = iter -
  // last_i the steps of gradient it holds. The mean keeps never-sent coordinates in
  // the draw; every term is the same on every rank, so the draw needs no message.
  // The sums come from one pass (host_passes.hpp: the same bits on every rank whatever
  // its thread count): sum of weights = sum(age m) + mean m x sum(age).
  double sum_known = 0, sum_age = 0, sum_age_known = 0;
  AgeSums(last, known, n, iter, &sum_known, &sum_age, &sum_age_known);
  const double mean_known = sum_known / n;
  double total = sum_age_known + mean_known * sum_age;
  const bool by_age_only = !(total > 0);
  if (by_age_only) total = sum_age;
  if (!(total > 0)) return out;
  AppendStochasticDraw(last, by_age_only ? nullptr : known, n, iter, static_cast<float>(mean_known),
                       static_cast<float>(expected / total), DrawSeed(stream), &out);
  return out;
}

void HostResidualKernels::LastSentMinAndSum(size_t b, int64_t iter, int64_t* min,
                                            double* sum) const {
  int64_t smallest = iter;
  double total = 0;
  for (int32_t last : state_.last_sent[b]) {
    smallest = std::min<int64_t>(smallest, last);
    total += last;
  }
  *min = smallest;
  *sum = total;
}

}  // namespace caffe
