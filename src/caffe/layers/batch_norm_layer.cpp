#include "caffe/layers/batch_norm_layer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "caffe/layer_factory.hpp"
#include "caffe/util/channel_tiles.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/plane_sums.hpp"

namespace caffe {

namespace {

int64_t ChannelsOf(const Blob& blob) { return blob.num_axes() > 1 ? blob.shape(1) : 1; }

}  // namespace

void BatchNormLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const BatchNormParameter& p = layer_param_.batch_norm_param();
  use_global_stats_ = p.has_use_global_stats() ? p.use_global_stats() : phase_ == TEST;
  moving_average_fraction_ = p.moving_average_fraction();
  eps_ = p.eps();
  LAYER_REQUIRE(eps_ >= 0.f) << "batch_norm_param.eps must not be negative, found " << eps_;
  LAYER_REQUIRE(bottom[0]->num_axes() >= 1)
      << "bottom '" << bottom_name(0) << "' needs at least one axis";
  channels_ = ChannelsOf(*bottom[0]);

  const vector<vector<int64_t>> shapes{{channels_}, {channels_}, {1}};
  if (blobs_.empty()) {
    for (const auto& shape : shapes) {
      blobs_.push_back(std::make_shared<Blob>(shape));
      math::set(blobs_.back()->count(), 0.f, blobs_.back()->mutable_cpu_data());
    }
  } else {
    LAYER_REQUIRE(blobs_.size() == 3)
        << "expected 3 blobs (mean, variance, normalizer), found " << blobs_.size();
    for (int i = 0; i < 3; ++i) {
      LAYER_REQUIRE(blobs_[i]->count() == shapes[i][0])
          << "blob " << i << " has shape " << ShapeToString(blobs_[i]->shape()) << ", expected "
          << shapes[i][0] << " element(s) for bottom '" << bottom_name(0) << "' of shape "
          << ShapeToString(bottom[0]->shape());
    }
  }

  // The statistics change in Forward, never by the solver: no gradients, and lr_mult
  // 0 so the solver leaves them alone (the net reads the specs from this layer).
  param_propagate_down_.assign(blobs_.size(), false);
  for (int i = 0; i < 3; ++i) {
    if (i >= layer_param_.param_size()) {
      ParamSpec* spec = layer_param_.add_param();
      spec->set_lr_mult(0.f);
      spec->set_decay_mult(0.f);
    } else if (layer_param_.param(i).lr_mult() != 0.f) {
      LOG(WARNING) << "layer '" << name() << "' (BatchNorm): ignoring lr_mult "
                   << layer_param_.param(i).lr_mult() << " on statistics blob " << i
                   << "; its statistics are not learned (no param spec is needed)";
      layer_param_.mutable_param(i)->set_lr_mult(0.f);
      layer_param_.mutable_param(i)->set_decay_mult(0.f);
    }
  }
}

void BatchNormLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(ChannelsOf(*bottom[0]) == channels_)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape())
      << " has " << ChannelsOf(*bottom[0]) << " channels (axis 1), the statistics have "
      << channels_;
  num_ = bottom[0]->shape(0);
  spatial_ = bottom[0]->num_axes() > 2 ? bottom[0]->count(2) : 1;
  LAYER_REQUIRE(spatial_ > 0) << "bottom '" << bottom_name(0) << "' of shape "
                              << ShapeToString(bottom[0]->shape())
                              << " has no positions per channel (axes 2 and on); the statistics need one";
  top[0]->ReshapeLike(*bottom[0]);
  x_norm_.ReshapeLike(*bottom[0]);
  mean_.Reshape({channels_});
  variance_.Reshape({channels_});
  inv_std_.Reshape({channels_});
}

// One read of x: each plane (short enough to stay in L1 for its second pass) gives its
// sum S and its squared deviations Q about its own rounded mean c. Per channel, in a
// fixed plane order (so the result does not depend on the thread count),
//   mean = sum S / m,  m * var = sum [Q + 2 (c - mean)(S - n c) + n (c - mean)^2],
// which is exact algebra for any c; with c near the plane's mean the terms stay small,
// so a large mean does not cancel as in E[x^2] - E[x]^2.
void BatchNormLayer::ComputeBatchStatistics(const float* x, int block) {
  float* mean = mean_.mutable_cpu_data();
  float* variance = variance_.mutable_cpu_data();
  const int64_t channels = channels_, spatial = spatial_;
  const double m = static_cast<double>(num_ * spatial_), n = static_cast<double>(spatial_);
  plane_stats_.resize(2 * num_ * channels_);
  double* stats = plane_stats_.data();
  // The centre of a plane of the given sum: both passes below must use the same one.
  auto center_of = [n](double sum) { return static_cast<float>(sum / n); };
  ForEachChannelTile(num_, channels_, spatial_, block, [=](int64_t base, int64_t, auto width) {
    constexpr int kWidth = decltype(width)::value;
    const float* in = x + base;
    // The tile's planes (n * channels + c) are base / spatial + j in either layout.
    double* tile_stats = stats + 2 * (base / spatial);
    if constexpr (kWidth == 1) {
      const double sum = PlaneSum(in, spatial);
      tile_stats[0] = sum;
      tile_stats[1] = PlaneSquaredDeviations(in, spatial, center_of(sum));
    } else {
      // Bit for bit the plain planes' sums (util/plane_sums.hpp).
      double sums[kWidth], squares[kWidth];
      float centers[kWidth];
      ChannelBlockSums(in, spatial, kWidth, sums);
      for (int j = 0; j < kWidth; ++j) centers[j] = center_of(sums[j]);
      ChannelBlockSquaredDeviations(in, spatial, kWidth, centers, squares);
      for (int j = 0; j < kWidth; ++j) {
        tile_stats[2 * j] = sums[j];
        tile_stats[2 * j + 1] = squares[j];
      }
    }
  });
  for (int64_t c = 0; c < channels_; ++c) {
    double total = 0.0;
    for (int64_t i = 0; i < num_; ++i) total += stats[2 * (i * channels + c)];
    const double mu = total / m;
    double squares = 0.0;
    for (int64_t i = 0; i < num_; ++i) {
      const double sum = stats[2 * (i * channels + c)];
      const double center = center_of(sum);
      const double shift = center - mu;
      squares += stats[2 * (i * channels + c) + 1] + 2.0 * shift * (sum - n * center) +
                 n * shift * shift;
    }
    mean[c] = static_cast<float>(mu);
    variance[c] = static_cast<float>(std::max(0.0, squares) / m);
  }
}

void BatchNormLayer::UpdateRunningStatistics() {
  const float maf = moving_average_fraction_;
  float* normalizer = blobs_[2]->mutable_cpu_data();
  normalizer[0] = normalizer[0] * maf + 1.f;
  math::axpby(channels_, 1.f, mean_.cpu_data(), maf, blobs_[0]->mutable_cpu_data());
  // The running variance estimates the population variance: unbiased, m / (m - 1).
  const int64_t m = num_ * spatial_;
  const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.f;
  math::axpby(channels_, correction, variance_.cpu_data(), maf, blobs_[1]->mutable_cpu_data());
}

void BatchNormLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  const int block = bottom[0]->channel_block();  // top's too (kFollowsItsBlobs)
  if (use_global_stats_) {
    // A normalizer of 0 means no statistics were gathered yet: use zeros.
    const float normalizer = blobs_[2]->cpu_data()[0];
    const float factor = normalizer == 0.f ? 0.f : 1.f / normalizer;
    math::scale(channels_, factor, blobs_[0]->cpu_data(), mean_.mutable_cpu_data());
    math::scale(channels_, factor, blobs_[1]->cpu_data(), variance_.mutable_cpu_data());
  } else {
    ComputeBatchStatistics(x, block);
  }
  const float* mean = mean_.cpu_data();
  const float* variance = variance_.cpu_data();
  float* inv_std = inv_std_.mutable_cpu_data();
  for (int64_t c = 0; c < channels_; ++c) inv_std[c] = 1.f / std::sqrt(variance[c] + eps_);

  // Training keeps x_hat for backward, written in the same pass; with a folded Scale
  // the top gets x_hat * s + b in that pass too, and the Scale leaves it as it is.
  float* x_hat = use_global_stats_ ? nullptr : x_norm_.mutable_cpu_data();
  x_norm_kept_ = x_hat != nullptr;
  x_norm_kept_on_device_ = false;
  float* y = top[0]->mutable_cpu_data();  // may alias x: each element is read once first
  const bool affine = x_hat && fold_scale_blob_;
  const float* fold_s = affine ? fold_scale_blob_->cpu_data() : nullptr;
  const float* fold_b = affine && fold_bias_blob_ ? fold_bias_blob_->cpu_data() : nullptr;
  fold_sums_.clear();
  const int64_t spatial = spatial_;
  ForEachChannelTile(num_, channels_, spatial_, block, [=](int64_t base, int64_t c0, auto width) {
    constexpr int kWidth = decltype(width)::value;
    const float* in = x + base;
    float* out = y + base;
    const float* mu = mean + c0;
    const float* scale = inv_std + c0;
    const int64_t n = spatial * kWidth;
    if (fold_s) {
      float* kept = x_hat + base;
      const float* f = fold_s + c0;
      float b[kWidth];
      for (int j = 0; j < kWidth; ++j) b[j] = fold_b ? fold_b[c0 + j] : 0.f;
      for (int64_t i = 0; i < n; i += kWidth) {
        for (int j = 0; j < kWidth; ++j) {
          const float v = (in[i + j] - mu[j]) * scale[j];
          kept[i + j] = v;
          out[i + j] = v * f[j] + b[j];
        }
      }
    } else if (x_hat) {
      float* kept = x_hat + base;
      for (int64_t i = 0; i < n; i += kWidth) {
        for (int j = 0; j < kWidth; ++j) {
          const float v = (in[i + j] - mu[j]) * scale[j];
          out[i + j] = v;
          kept[i + j] = v;
        }
      }
    } else {
      for (int64_t i = 0; i < n; i += kWidth) {
        for (int j = 0; j < kWidth; ++j) out[i + j] = (in[i + j] - mu[j]) * scale[j];
      }
    }
  });
  if (!use_global_stats_) UpdateRunningStatistics();
}

bool BatchNormLayer::AcceptChannelScaleFold(const Blob* scale, const Blob* bias) {
  if (scale->count() != channels_ || (bias && bias->count() != channels_)) return false;
  fold_scale_blob_ = scale;
  fold_bias_blob_ = bias;
  return true;
}

void BatchNormLayer::ReceiveChannelScaleFold(const float* scale, std::vector<double> sums) {
  LAYER_REQUIRE(static_cast<int64_t>(sums.size()) == 2 * channels_)
      << "a folded Scale handed over sums for " << sums.size() / 2 << " channels, expected "
      << channels_;
  fold_scale_.assign(scale, scale + channels_);
  fold_sums_ = std::move(sums);
}

// Batch statistics: with x_hat the normalized input and means over (batch, spatial),
//   dx = inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
// Global statistics are constants, so dx = dy * inv_std.
// With a folded Scale (factor s per channel) the top diff holds the Scale's dy, so
// this layer's dy is s * dy: the sums the Scale handed over, times s, give the means,
// and each element is multiplied by s in the same pass.
void BatchNormLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                  const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();  // may alias dy
  const float* inv_std = inv_std_.cpu_data();
  const float* x_hat = x_norm_.cpu_data();
  const double m = static_cast<double>(num_ * spatial_);
  const bool global = use_global_stats_;
  const int block = bottom[0]->channel_block();
  const int64_t spatial = spatial_;
  // Per channel: mean(dy) and mean(dy * x_hat), zero under global statistics.
  vector<float> mean_dy(channels_, 0.f), mean_dy_xhat(channels_, 0.f);
  const bool folded = !global && !fold_sums_.empty();
  if (folded) {
    for (int64_t c = 0; c < channels_; ++c) {
      mean_dy[c] = static_cast<float>(fold_scale_[c] * fold_sums_[2 * c] / m);
      mean_dy_xhat[c] = static_cast<float>(fold_scale_[c] * fold_sums_[2 * c + 1] / m);
    }
    fold_sums_.clear();
  } else if (!global) {
    const vector<double> sums = ChannelSumsAndDots(num_, channels_, spatial_, block, dy, x_hat);
    for (int64_t c = 0; c < channels_; ++c) {
      mean_dy[c] = static_cast<float>(sums[2 * c] / m);
      mean_dy_xhat[c] = static_cast<float>(sums[2 * c + 1] / m);
    }
  }
  // dx tile by tile, threads splitting the tiles into contiguous ranges: split by
  // channel instead, two threads writing interleaved blocks ran slower than one.
  const float* shift = mean_dy.data();
  const float* slope = mean_dy_xhat.data();
  const float* factor = folded ? fold_scale_.data() : nullptr;
  ForEachChannelTile(num_, channels_, spatial_, block, [=](int64_t base, int64_t c0, auto width) {
    constexpr int kWidth = decltype(width)::value;
    const float* g = dy + base;
    float* out = dx + base;
    const float* scale = inv_std + c0;
    const int64_t n = spatial * kWidth;
    if (global) {
      for (int64_t i = 0; i < n; i += kWidth) {
        for (int j = 0; j < kWidth; ++j) out[i + j] = g[i + j] * scale[j];
      }
    } else {
      const float* h = x_hat + base;
      const float* a = shift + c0;
      const float* b = slope + c0;
      if (factor) {
        const float* f = factor + c0;
        for (int64_t i = 0; i < n; i += kWidth) {
          for (int j = 0; j < kWidth; ++j) {
            out[i + j] = (g[i + j] * f[j] - a[j] - h[i + j] * b[j]) * scale[j];
          }
        }
      } else {
        for (int64_t i = 0; i < n; i += kWidth) {
          for (int j = 0; j < kWidth; ++j) out[i + j] = (g[i + j] - a[j] - h[i + j] * b[j]) * scale[j];
        }
      }
    }
  });
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
