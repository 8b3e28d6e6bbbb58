// Sums over one short contiguous run of floats (a feature-map plane), for the layers
// that reduce over batch and space (BatchNorm, Scale).
//
// One running total is a serial chain: every addition waits for the one before it
// (several cycles each), and the compiler may not reorder float additions to break
// it. These keep kPlaneSumLanes independent partial sums, which vectorise, and add
// them up in double. The order of additions depends on n alone, so a result does not
// depend on how many threads run the layer. A plane is short (hundreds of elements),
// so the float partial sums stay accurate; callers add the planes' totals in double.
#ifndef CAFFE_UTIL_PLANE_SUMS_HPP_
#define CAFFE_UTIL_PLANE_SUMS_HPP_

#include <cstdint>

namespace caffe {

constexpr int kPlaneSumLanes = 32;

// The sum of x[0..n).
double PlaneSum(const float* x, int64_t n);

// The sum of (x[i] - center)^2 over [0, n), each deviation taken in float.
double PlaneSquaredDeviations(const float* x, int64_t n, float center);

// The sum of a[0..n) and the dot product of a and b, in one pass over both.
void PlaneSumAndDot(const float* a, const float* b, int64_t n, double* sum_a, double* dot_ab);

}  // namespace caffe

#endif  // CAFFE_UTIL_PLANE_SUMS_HPP_
