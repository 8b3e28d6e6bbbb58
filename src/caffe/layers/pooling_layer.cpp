#include "caffe/layers/pooling_layer.hpp"

#include <algorithm>
#include <climits>

#include "caffe/layer_factory.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

namespace {

// Integer floor/ceil of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

// Calls body(c) for each of `planes` planes of `plane_size` inputs, threads taking
// whole planes: a plane's outputs read, and its gradients write, that plane alone.
template <typename Body>
void ForEachPlane(int planes, int64_t plane_size, const Body& body) {
  ParallelFor(
      planes,
      [&body](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) body(c);
      },
      MinItemsFor(plane_size));
}

}  // namespace

void PoolingLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const PoolingParameter& p = layer_param_.pooling_param();
  method_ = p.pool();
  global_pooling_ = p.global_pooling();
  ceil_mode_ = p.round_mode() == PoolingParameter::CEIL;

  const bool has_kernel_hw = p.has_kernel_h() || p.has_kernel_w();
  if (global_pooling_) {
    LAYER_REQUIRE(!p.has_kernel_size() && !has_kernel_hw)
        << "global_pooling takes the whole image as the kernel; do not set kernel_size, "
           "kernel_h or kernel_w";
  } else {
    LAYER_REQUIRE(p.has_kernel_size() != has_kernel_hw)
        << (p.has_kernel_size() ? "kernel_size and kernel_h/kernel_w are alternatives; found both"
                                : "pooling_param needs kernel_size, or kernel_h and kernel_w");
    LAYER_REQUIRE(p.has_kernel_size() || (p.has_kernel_h() && p.has_kernel_w()))
        << "kernel_h and kernel_w must be given together";
    kernel_h_ = static_cast<int>(p.has_kernel_size() ? p.kernel_size() : p.kernel_h());
    kernel_w_ = static_cast<int>(p.has_kernel_size() ? p.kernel_size() : p.kernel_w());
    LAYER_REQUIRE(kernel_h_ > 0 && kernel_w_ > 0)
        << "kernel size must be positive, found " << kernel_h_ << "x" << kernel_w_;
  }

  const bool has_pad_hw = p.has_pad_h() || p.has_pad_w();
  LAYER_REQUIRE(!(p.has_pad() && has_pad_hw))
      << "pad and pad_h/pad_w are alternatives; found both";
  pad_h_ = static_cast<int>(has_pad_hw ? p.pad_h() : p.pad());
  pad_w_ = static_cast<int>(has_pad_hw ? p.pad_w() : p.pad());

  const bool has_stride_hw = p.has_stride_h() || p.has_stride_w();
  LAYER_REQUIRE(!(p.has_stride() && has_stride_hw))
      << "stride and stride_h/stride_w are alternatives; found both";
  LAYER_REQUIRE(!has_stride_hw || (p.has_stride_h() && p.has_stride_w()))
      << "stride_h and stride_w must be given together";
  stride_h_ = static_cast<int>(has_stride_hw ? p.stride_h() : p.stride());
  stride_w_ = static_cast<int>(has_stride_hw ? p.stride_w() : p.stride());
  LAYER_REQUIRE(stride_h_ > 0 && stride_w_ > 0)
      << "stride must be positive, found " << stride_h_ << "x" << stride_w_;

  // The fields are unsigned in the proto: values past INT_MAX arrive here negative.
  LAYER_REQUIRE(pad_h_ >= 0 && pad_w_ >= 0)
      << "pad must be below 2^31, found " << (has_pad_hw ? p.pad_h() : p.pad()) << "x"
      << (has_pad_hw ? p.pad_w() : p.pad());

  if (global_pooling_) {
    LAYER_REQUIRE(pad_h_ == 0 && pad_w_ == 0 && stride_h_ == 1 && stride_w_ == 1)
        << "global_pooling needs pad 0 and stride 1, found pad " << pad_h_ << "x" << pad_w_
        << ", stride " << stride_h_ << "x" << stride_w_;
  } else {
    LAYER_REQUIRE(pad_h_ < kernel_h_ && pad_w_ < kernel_w_)
        << "pad must be smaller than the kernel, found pad " << pad_h_ << "x" << pad_w_
        << " with kernel " << kernel_h_ << "x" << kernel_w_;
  }
  if (pad_h_ != 0 || pad_w_ != 0) {
    LAYER_REQUIRE(method_ == PoolingParameter::AVE || method_ == PoolingParameter::MAX)
        << "padding is only supported for MAX and AVE pooling";
  }
}

int PoolingLayer::PooledSize(int64_t input, int kernel, int pad, int stride,
                             bool any_pad) const {
  // 64-bit: pad and kernel may each be close to INT_MAX.
  const int64_t span = input + 2 * static_cast<int64_t>(pad) - kernel;
  int64_t out = (ceil_mode_ ? CeilDiv(span, stride) : FloorDiv(span, stride)) + 1;
  // Caffe's rule (applied to both axes whenever either is padded): the last window
  // must start inside the image or its left padding, never in the right padding alone.
  if (any_pad && (out - 1) * stride >= input + pad) --out;
  // Past INT_MAX (a huge pad): report it as not fitting, like any other bad size.
  return out > INT_MAX ? -1 : static_cast<int>(out);
}

void PoolingLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  LAYER_REQUIRE(bottom[0]->num_axes() == 4)
      << "bottom '" << bottom_name(0) << "' must be 4-d (N x C x H x W), found shape "
      << ShapeToString(bottom[0]->shape());
  LAYER_REQUIRE(bottom[0]->count(0, 2) <= INT_MAX && bottom[0]->shape(2) <= INT_MAX &&
                bottom[0]->shape(3) <= INT_MAX)
      << "bottom '" << bottom_name(0) << "' of shape " << ShapeToString(bottom[0]->shape())
      << " is too large (N x C, H and W must each be below 2^31)";
  planes_ = static_cast<int>(bottom[0]->count(0, 2));
  height_ = static_cast<int>(bottom[0]->shape(2));
  width_ = static_cast<int>(bottom[0]->shape(3));
  if (global_pooling_) {
    kernel_h_ = height_;
    kernel_w_ = width_;
  }
  const bool any_pad = pad_h_ != 0 || pad_w_ != 0;
  pooled_height_ = PooledSize(height_, kernel_h_, pad_h_, stride_h_, any_pad);
  pooled_width_ = PooledSize(width_, kernel_w_, pad_w_, stride_w_, any_pad);
  LAYER_REQUIRE(pooled_height_ > 0 && pooled_width_ > 0)
      << "kernel " << kernel_h_ << "x" << kernel_w_ << " with pad " << pad_h_ << "x" << pad_w_
      << " does not fit bottom '" << bottom_name(0) << "' of shape "
      << ShapeToString(bottom[0]->shape());
  const vector<int64_t> top_shape{bottom[0]->shape(0), bottom[0]->shape(1), pooled_height_,
                                  pooled_width_};
  for (Blob* t : top) t->Reshape(top_shape);
  const bool needs_index = (method_ == PoolingParameter::MAX && top.size() == 1) ||
                           (method_ == PoolingParameter::STOCHASTIC && phase_ == TRAIN);
  ResizeScratch(&source_index_, needs_index ? top[0]->count() : 0, "the max-pooling index");
}

PoolingLayer::Window PoolingLayer::WindowAt(int ph, int pw) const {
  const int h0 = ph * stride_h_ - pad_h_;
  const int w0 = pw * stride_w_ - pad_w_;
  return {std::max(h0, 0), std::min(h0 + kernel_h_, height_), std::max(w0, 0),
          std::min(w0 + kernel_w_, width_)};
}

int PoolingLayer::AveragePoolSize(int ph, int pw) const {
  const int h0 = ph * stride_h_ - pad_h_;
  const int w0 = pw * stride_w_ - pad_w_;
  const int h1 = std::min(h0 + kernel_h_, height_ + pad_h_);
  const int w1 = std::min(w0 + kernel_w_, width_ + pad_w_);
  return (h1 - h0) * (w1 - w0);
}

void PoolingLayer::ForwardMax(const float* x, float* y, float* mask_top) {
  // The geometry is copied into locals so that the stores through y and index, which
  // the compiler cannot tell apart from this layer's members, do not force reloads.
  const int64_t plane = static_cast<int64_t>(height_) * width_;
  const int pooled_h = pooled_height_, pooled_w = pooled_width_;
  const int64_t pooled_plane = static_cast<int64_t>(pooled_h) * pooled_w;
  const int height = height_, width = width_;
  const int kernel_h = kernel_h_, kernel_w = kernel_w_, stride_h = stride_h_,
            stride_w = stride_w_, pad_h = pad_h_, pad_w = pad_w_;
  int* index = mask_top ? nullptr : source_index_.data();
  // The outputs whose windows need no clipping along w: [interior_begin, interior_end).
  const int interior_begin = std::min((pad_w + stride_w - 1) / stride_w, pooled_w);
  const int interior_end =
      width + pad_w >= kernel_w
          ? std::max(std::min((width + pad_w - kernel_w) / stride_w + 1, pooled_w), interior_begin)
          : interior_begin;

  // One output: its window clipped to the image, visited in row-major order. Nothing
  // branches on the data: which input wins is data-dependent, and a branch on it
  // mispredicts about every other time on real activations.
  auto pool_one = [=](const float* xc, int h0, int h1, int pw, float* y_out, int* index_out) {
    const int w0 = std::max(pw * stride_w - pad_w, 0);
    const int w1 = std::min(pw * stride_w - pad_w + kernel_w, width);
    // A window entirely outside the image (CEIL rounding with stride > kernel) has
    // nothing to pool: it outputs 0 and passes no gradient.
    int best_index = -1;
    float best = 0.f;
    if (h0 < h1 && w0 < w1) {
      // The first element wins ties; a NaN stays only where it comes first.
      best_index = h0 * width + w0;
      best = xc[best_index];
      for (int h = h0; h < h1; ++h) {
        const float* row = xc + h * width;
        for (int w = w0; w < w1; ++w) {
          // All ones where row[w] wins; the index moves by mask arithmetic, which the
          // compiler cannot turn back into a branch.
          const int wins = -static_cast<int>(row[w] > best);
          best_index ^= (best_index ^ (h * width + w)) & wins;
          best = std::max(best, row[w]);
        }
      }
    }
    *y_out = best;
    *index_out = best_index;
  };

  ForEachPlane(planes_, plane, [=](int64_t c) {
    const float* xc = x + c * plane;
    for (int ph = 0; ph < pooled_h; ++ph) {
      const int h0 = std::max(ph * stride_h - pad_h, 0);
      const int h1 = std::min(ph * stride_h - pad_h + kernel_h, height);
      const int64_t row_out = c * pooled_plane + static_cast<int64_t>(ph) * pooled_w;
      float* y_row = y + row_out;
      if (mask_top) {
        // The mask top holds float indices: one output at a time.
        for (int pw = 0; pw < pooled_w; ++pw) {
          int source;
          pool_one(xc, h0, h1, pw, y_row + pw, &source);
          mask_top[row_out + pw] = static_cast<float>(source);
        }
        continue;
      }
      int* index_row = index + row_out;
      // The interior outputs of a row that reads the image go below; the rest here.
      const bool row_inside = h0 < h1 && interior_begin < interior_end;
      const int skip_begin = row_inside ? interior_begin : pooled_w;
      const int skip_end = row_inside ? interior_end : pooled_w;
      for (int pw = 0; pw < skip_begin; ++pw) {
        pool_one(xc, h0, h1, pw, y_row + pw, index_row + pw);
      }
      for (int pw = skip_end; pw < pooled_w; ++pw) {
        pool_one(xc, h0, h1, pw, y_row + pw, index_row + pw);
      }
      if (!row_inside) continue;
      // The interior outputs side by side, one window position at a time, in the
      // same row-major order as pool_one: independent outputs in the inner loop
      // instead of a chain of comparisons per window.
      for (int pw = interior_begin; pw < interior_end; ++pw) {
        const int first = h0 * width + pw * stride_w - pad_w;
        y_row[pw] = xc[first];
        index_row[pw] = first;
      }
      for (int h = h0; h < h1; ++h) {
        for (int kw = h == h0 ? 1 : 0; kw < kernel_w; ++kw) {
          // Negative for a left-padded window's first columns; the interior outputs'
          // indices offset + pw * stride_w all lie in the row.
          const int offset = h * width - pad_w + kw;
          for (int pw = interior_begin; pw < interior_end; ++pw) {
            const float v = xc[offset + pw * stride_w];
            const int wins = -static_cast<int>(v > y_row[pw]);
            index_row[pw] ^= (index_row[pw] ^ (offset + pw * stride_w)) & wins;
            y_row[pw] = std::max(y_row[pw], v);
          }
        }
      }
    }
  });
}

void PoolingLayer::ForwardAve(const float* x, float* y) {
  const int64_t plane = static_cast<int64_t>(height_) * width_;
  const int64_t pooled_plane = static_cast<int64_t>(pooled_height_) * pooled_width_;
  ForEachPlane(planes_, plane, [=](int64_t c) {
    const float* xc = x + c * plane;
    int64_t out = c * pooled_plane;
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw, ++out) {
        const Window win = WindowAt(ph, pw);
        float sum = 0;
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) sum += xc[h * width_ + w];
        }
        y[out] = win.empty() ? 0.f : sum / AveragePoolSize(ph, pw);
      }
    }
  });
}

void PoolingLayer::ForwardStochasticTrain(const float* x, float* y) {
  vector<float> uniform(source_index_.size());
  math::rng_uniform(static_cast<int64_t>(uniform.size()), 0.f, 1.f, context().rng(),
                    uniform.data());
  const int plane = height_ * width_;
  int64_t out = 0;
  for (int c = 0; c < planes_; ++c, x += plane) {
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw, ++out) {
        const Window win = WindowAt(ph, pw);
        float total = 0;
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) total += x[h * width_ + w];
        }
        // Walk the cumulative sum to the first element that reaches u * total. The
        // last element is the fallback, so rounding can never leave nothing chosen.
        const float threshold = uniform[out] * total;
        int chosen = win.empty() ? -1 : (win.h1 - 1) * width_ + win.w1 - 1;
        float cumulative = 0;
        bool found = false;
        for (int h = win.h0; h < win.h1 && !found; ++h) {
          for (int w = win.w0; w < win.w1 && !found; ++w) {
            cumulative += x[h * width_ + w];
            if (cumulative >= threshold) {
              chosen = h * width_ + w;
              found = true;
            }
          }
        }
        source_index_[out] = chosen;
        y[out] = chosen < 0 ? 0.f : x[chosen];
      }
    }
  }
}

void PoolingLayer::ForwardStochasticTest(const float* x, float* y) {
  const int plane = height_ * width_;
  int64_t out = 0;
  for (int c = 0; c < planes_; ++c, x += plane) {
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw, ++out) {
        // Expected value of the TRAIN sample: sum x_i * (x_i / sum x).
        const Window win = WindowAt(ph, pw);
        float sum = 0, sum_sq = 0;
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) {
            const float v = x[h * width_ + w];
            sum += v;
            sum_sq += v * v;
          }
        }
        y[out] = sum > 0 ? sum_sq / sum : 0.f;
      }
    }
  }
}

void PoolingLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  switch (method_) {
    case PoolingParameter::MAX:
      ForwardMax(x, y, top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr);
      break;
    case PoolingParameter::AVE:
      ForwardAve(x, y);
      break;
    case PoolingParameter::STOCHASTIC:
      if (phase_ == TRAIN) {
        ForwardStochasticTrain(x, y);
      } else {
        ForwardStochasticTest(x, y);
      }
      break;
  }
}

void PoolingLayer::BackwardMax(const float* dy, const float* mask_top, float* dx) {
  const int64_t plane = static_cast<int64_t>(height_) * width_;
  const int64_t pooled_plane = static_cast<int64_t>(pooled_height_) * pooled_width_;
  const int* index = source_index_.data();
  ForEachPlane(planes_, plane, [=](int64_t c) {
    float* dxc = dx + c * plane;
    for (int64_t out = c * pooled_plane; out < (c + 1) * pooled_plane; ++out) {
      const int source = mask_top ? static_cast<int>(mask_top[out]) : index[out];
      if (source >= 0) dxc[source] += dy[out];
    }
  });
}

void PoolingLayer::BackwardAve(const float* dy, float* dx) {
  const int64_t plane = static_cast<int64_t>(height_) * width_;
  const int64_t pooled_plane = static_cast<int64_t>(pooled_height_) * pooled_width_;
  ForEachPlane(planes_, plane, [=](int64_t c) {
    float* dxc = dx + c * plane;
    int64_t out = c * pooled_plane;
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw, ++out) {
        const Window win = WindowAt(ph, pw);
        if (win.empty()) continue;
        const float share = dy[out] / AveragePoolSize(ph, pw);
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) dxc[h * width_ + w] += share;
        }
      }
    }
  });
}

void PoolingLayer::BackwardStochasticTrain(const float* dy, float* dx) {
  BackwardMax(dy, nullptr, dx);  // the sampled input gets the whole gradient
}

void PoolingLayer::BackwardStochasticTest(const float* dy, const float* x, float* dx) {
  const int plane = height_ * width_;
  int64_t out = 0;
  for (int c = 0; c < planes_; ++c, x += plane, dx += plane) {
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw, ++out) {
        const Window win = WindowAt(ph, pw);
        float sum = 0, sum_sq = 0;
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) {
            const float v = x[h * width_ + w];
            sum += v;
            sum_sq += v * v;
          }
        }
        if (!(sum > 0)) continue;
        // d(sum_sq / sum)/dx_i = (2 x_i sum - sum_sq) / sum^2
        const float scale = dy[out] / (sum * sum);
        for (int h = win.h0; h < win.h1; ++h) {
          for (int w = win.w0; w < win.w1; ++w) {
            dx[h * width_ + w] += scale * (2 * x[h * width_ + w] * sum - sum_sq);
          }
        }
      }
    }
  }
}

void PoolingLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                                const vector<Blob*>& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  math::set(bottom[0]->count(), 0.f, dx);
  switch (method_) {
    case PoolingParameter::MAX:
      BackwardMax(dy, top.size() > 1 ? top[1]->cpu_data() : nullptr, dx);
      break;
    case PoolingParameter::AVE:
      BackwardAve(dy, dx);
      break;
    case PoolingParameter::STOCHASTIC:
      if (phase_ == TRAIN) {
        BackwardStochasticTrain(dy, dx);
      } else {
        BackwardStochasticTest(dy, bottom[0]->cpu_data(), dx);
      }
      break;
  }
}

// Registered in layer_engines.cpp, which picks between this and its engine variants.

}  // namespace caffe
