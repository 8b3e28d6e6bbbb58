#include "caffe/util/plane_sums.hpp"

#include <cstring>

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

}  // namespace caffe
