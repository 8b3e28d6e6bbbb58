#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "caffe/util/plane_sums.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

// Lengths around every boundary of the lane layout (whole rows of lanes, single
// vectors, a scalar tail) and the feature-map sizes of the model zoo.
const int64_t kLengths[] = {0, 1, 7, 8, 9, 31, 32, 33, 40, 41, 49, 196, 784, 1001};

std::vector<float> Values(int64_t n, float offset, unsigned seed) {
  Blob blob({std::max<int64_t>(n, 1)});
  FillUniform(&blob, -1, 1, seed);
  std::vector<float> values(blob.cpu_data(), blob.cpu_data() + n);
  for (float& v : values) v += offset;
  return values;
}

}  // namespace

TEST(PlaneSumsTest, MatchADoublePrecisionLoopAtEveryLength) {
  for (int64_t n : kLengths) {
    const std::vector<float> a = Values(n, 0.25f, 1), b = Values(n, -0.5f, 2);
    double sum = 0, dot = 0, squares = 0;
    const float center = 0.125f;
    for (int64_t i = 0; i < n; ++i) {
      sum += a[i];
      dot += static_cast<double>(a[i]) * b[i];
      squares += (static_cast<double>(a[i]) - center) * (static_cast<double>(a[i]) - center);
    }
    const double tolerance = 1e-5 * (1 + n);
    EXPECT_NEAR(PlaneSum(a.data(), n), sum, tolerance) << "n = " << n;
    EXPECT_NEAR(PlaneSquaredDeviations(a.data(), n, center), squares, tolerance) << "n = " << n;
    double got_sum = -1, got_dot = -1;
    PlaneSumAndDot(a.data(), b.data(), n, &got_sum, &got_dot);
    EXPECT_NEAR(got_sum, sum, tolerance) << "n = " << n;
    EXPECT_NEAR(got_dot, dot, tolerance) << "n = " << n;
  }
}

TEST(PlaneSumsTest, EveryElementCountsOnce) {
  // A one at each position in turn: a dropped or doubled lane or tail element shows.
  for (int64_t n : kLengths) {
    std::vector<float> x(n, 0.f);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 1.f;
      ASSERT_EQ(PlaneSum(x.data(), n), 1.0) << "n = " << n << ", position " << i;
      ASSERT_EQ(PlaneSquaredDeviations(x.data(), n, 0.f), 1.0) << "n = " << n << ", position " << i;
      double sum = 0, dot = 0;
      PlaneSumAndDot(x.data(), x.data(), n, &sum, &dot);
      ASSERT_EQ(sum, 1.0) << "n = " << n << ", position " << i;
      ASSERT_EQ(dot, 1.0) << "n = " << n << ", position " << i;
      x[i] = 0.f;
    }
  }
}

}  // namespace caffe
