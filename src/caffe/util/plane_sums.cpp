#include "caffe/util/plane_sums.hpp"

#include <cstring>

#include "caffe/util/channel_tiles.hpp"

namespace caffe {

namespace {

// Eight floats that GCC and Clang keep in one vector register (two on machines
// without 256-bit vectors). Plain float arrays as accumulators end up on the stack,
// and every addition then waits on a store and a load.
typedef float Vec8 __attribute__((vector_size(32)));
constexpr int kVectors = kPlaneSumLanes / 8;
static_assert(kPlaneSumLanes % 8 == 0, "lanes come in whole vectors");

Vec8 Load(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned; compiles to one load
  return v;
}

// Runs step(acc, i) over [0, n): kVectors vectors at a time, then one vector at a time
// into the first accumulator (small planes such as 7x7 are mostly such a tail), then
// element by element for the last n % 8 through step_one. Returns the lanes' total.
template <typename Step, typename StepOne>
double Accumulate(int64_t n, const Step& step, const StepOne& step_one) {
  Vec8 acc[kVectors] = {};
  int64_t i = 0;
  for (; i + kPlaneSumLanes <= n; i += kPlaneSumLanes) {
#pragma GCC unroll 8  // whole, so that the accumulators stay in registers
    for (int v = 0; v < kVectors; ++v) step(acc[v], i + 8 * v);
  }
  for (; i + 8 <= n; i += 8) step(acc[0], i);
  float tail = 0.f;
  for (; i < n; ++i) tail += step_one(i);
  // The vectors, then the lanes, added as a tree: one running double over all 32 lanes
  // is a chain of 32 dependent additions, which cost more than a 7x7 plane's loads.
  Vec8 lanes = acc[0];
  for (int v = 1; v < kVectors; ++v) lanes += acc[v];
  const double pairs[4] = {static_cast<double>(lanes[0]) + lanes[1], static_cast<double>(lanes[2]) + lanes[3],
                           static_cast<double>(lanes[4]) + lanes[5], static_cast<double>(lanes[6]) + lanes[7]};
  return ((pairs[0] + pairs[1]) + (pairs[2] + pairs[3])) + tail;
}

// Accumulate for eight channels side by side: step(acc, s) adds position s's eight
// values (one per channel) to acc, step_one(s, j) is channel j's value at s for the
// scalar tail. acc[l] holds lane l of all eight channels, so each channel gets the
// lanes, the tail and the final tree of Accumulate, in its order and with its
// arithmetic (the tail in scalar floats, as there).
template <typename Step, typename StepOne>
void AccumulateEightChannels(int64_t n, const Step& step, const StepOne& step_one, double* out) {
  Vec8 acc[kPlaneSumLanes] = {};
  int64_t i = 0;
  for (; i + kPlaneSumLanes <= n; i += kPlaneSumLanes) {
#pragma GCC unroll 32  // whole, so that acc[lane] names a register, not memory
    for (int lane = 0; lane < kPlaneSumLanes; ++lane) step(acc[lane], i + lane);
  }
  for (; i + 8 <= n; i += 8) {
#pragma GCC unroll 8
    for (int lane = 0; lane < 8; ++lane) step(acc[lane], i + lane);
  }
  float tail[8] = {};
  for (; i < n; ++i) {
    for (int j = 0; j < 8; ++j) tail[j] += step_one(i, j);
  }
  Vec8 lanes[8];
  for (int k = 0; k < 8; ++k) {
    lanes[k] = acc[k];
    for (int v = 1; v < kVectors; ++v) lanes[k] += acc[8 * v + k];
  }
  for (int j = 0; j < 8; ++j) {
    const double pairs[4] = {static_cast<double>(lanes[0][j]) + lanes[1][j],
                             static_cast<double>(lanes[2][j]) + lanes[3][j],
                             static_cast<double>(lanes[4][j]) + lanes[5][j],
                             static_cast<double>(lanes[6][j]) + lanes[7][j]};
    out[j] = ((pairs[0] + pairs[1]) + (pairs[2] + pairs[3])) + tail[j];
  }
}

}  // namespace

double PlaneSum(const float* x, int64_t n) {
  return Accumulate(
      n, [x](Vec8& acc, int64_t i) { acc += Load(x + i); }, [x](int64_t i) { return x[i]; });
}

double PlaneSquaredDeviations(const float* x, int64_t n, float center) {
  return Accumulate(
      n,
      [x, center](Vec8& acc, int64_t i) {
        const Vec8 d = Load(x + i) - center;
        acc += d * d;
      },
      [x, center](int64_t i) { return (x[i] - center) * (x[i] - center); });
}

void PlaneSumAndDot(const float* a, const float* b, int64_t n, double* sum_a, double* dot_ab) {
  // Two accumulations in one pass would need twice the registers' worth of lanes in
  // one template; two passes over a plane that is in cache by the second cost less.
  *sum_a = PlaneSum(a, n);
  *dot_ab = Accumulate(
      n, [a, b](Vec8& acc, int64_t i) { acc += Load(a + i) * Load(b + i); },
      [a, b](int64_t i) { return a[i] * b[i]; });
}

void ChannelBlockSums(const float* x, int64_t n, int block, double* out) {
  for (int g = 0; g < block; g += 8) {
    const float* base = x + g;
    AccumulateEightChannels(
        n, [base, block](Vec8& acc, int64_t s) { acc += Load(base + s * block); },
        [base, block](int64_t s, int j) { return base[s * block + j]; }, out + g);
  }
}

void ChannelBlockSquaredDeviations(const float* x, int64_t n, int block, const float* centers,
                                   double* out) {
  for (int g = 0; g < block; g += 8) {
    const float* base = x + g;
    const float* c = centers + g;
    const Vec8 center = Load(c);
    AccumulateEightChannels(
        n,
        [base, block, center](Vec8& acc, int64_t s) {
          const Vec8 d = Load(base + s * block) - center;
          acc += d * d;
        },
        [base, block, c](int64_t s, int j) {
          return (base[s * block + j] - c[j]) * (base[s * block + j] - c[j]);
        },
        out + g);
  }
}

void ChannelBlockSumsAndDots(const float* a, const float* b, int64_t n, int block,
                             double* sums, double* dots) {
  ChannelBlockSums(a, n, block, sums);
  for (int g = 0; g < block; g += 8) {
    const float* base_a = a + g;
    const float* base_b = b + g;
    AccumulateEightChannels(
        n,
        [base_a, base_b, block](Vec8& acc, int64_t s) {
          acc += Load(base_a + s * block) * Load(base_b + s * block);
        },
        [base_a, base_b, block](int64_t s, int j) { return base_a[s * block + j] * base_b[s * block + j]; },
        dots + g);
  }
}

std::vector<double> ChannelSumsAndDots(int64_t outer, int64_t channels, int64_t inner, int block,
                                       const float* a, const float* b) {
  if (block == 0) {
    return ChannelSums<2>(outer, channels, inner, [=](int64_t o, int64_t c, double* acc) {
      const int64_t base = (o * channels + c) * inner;
      if (b) {
        double sum, dot;
        PlaneSumAndDot(a + base, b + base, inner, &sum, &dot);
        acc[0] += sum;
        acc[1] += dot;
      } else {
        acc[0] += PlaneSum(a + base, inner);
      }
    });
  }
  return ChannelBlockTotals<2>(outer, channels, inner, block, [=](int64_t o, int64_t cb, double* acc) {
    const int64_t base = (o * (channels / block) + cb) * inner * block;
    double sums[kMaxChannelBlock], dots[kMaxChannelBlock] = {};
    if (b) {
      ChannelBlockSumsAndDots(a + base, b + base, inner, block, sums, dots);
    } else {
      ChannelBlockSums(a + base, inner, block, sums);
    }
    for (int j = 0; j < block; ++j) {
      acc[2 * j] += sums[j];
      acc[2 * j + 1] += dots[j];
    }
  });
}

}  // namespace caffe
