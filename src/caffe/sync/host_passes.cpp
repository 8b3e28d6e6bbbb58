#include "caffe/sync/host_passes.hpp"

#include "caffe/sync/shared_random.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace caffe {

namespace {

// Eight floats (or ints) that GCC keeps in one vector register; the arithmetic on
// them compiles to vector instructions at -O2 (plain loops would need -O3 and
// reassociation to vectorise a reduction).
typedef float Vec8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));

Vec8 Load(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned; one load
  return v;
}
void Store(const Vec8& v, float* p) { std::memcpy(p, &v, sizeof v); }
Vec8 Abs(const Vec8& v) { return (Vec8)((Int8)v & 0x7fffffff); }
// -1 in each lane whose value is NaN or infinite (all exponent bits set), else 0.
Int8 NonFinite(const Vec8& v) { return ((Int8)v & 0x7f800000) == 0x7f800000; }

// The lanes of two accumulators, added as a tree in double.
double LaneTotal(const Vec8& a, const Vec8& b) {
  const Vec8 s = a + b;
  const double pairs[4] = {double(s[0]) + s[1], double(s[2]) + s[3], double(s[4]) + s[5],
                           double(s[6]) + s[7]};
  return (pairs[0] + pairs[1]) + (pairs[2] + pairs[3]);
}

// Runs values(i) -> Vec8 of elements [i, i + 8) over [0, n) in blocks of kSumBlock,
// adding each value and its square to float lanes and each block's lanes into double
// totals; scalar(i) serves the last n % 16 elements.
template <typename Values, typename Scalar>
void BlockedSumAndSquares(int64_t n, const Values& values, const Scalar& scalar, double* sum,
                          double* sum_squares) {
  double total = 0, squares = 0;
  int64_t i = 0;
  while (i + 16 <= n) {
    const int64_t end = std::min(n, i + kSumBlock);
    Vec8 s0 = {}, s1 = {}, q0 = {}, q1 = {};
    for (; i + 16 <= end; i += 16) {
      const Vec8 a = values(i), b = values(i + 8);
      s0 += a;
      s1 += b;
      q0 += a * a;
      q1 += b * b;
    }
    total += LaneTotal(s0, s1);
    squares += LaneTotal(q0, q1);
  }
  for (; i < n; ++i) {
    const float a = scalar(i);
    total += a;
    squares += double(a) * a;
  }
  *sum = total;
  *sum_squares = squares;
}

}  // namespace

void SumAndSquares(const float* x, int64_t n, double* sum, double* sum_squares) {
  BlockedSumAndSquares(
      n, [x](int64_t i) { return Load(x + i); }, [x](int64_t i) { return x[i]; }, sum,
      sum_squares);
}

double MeanSquare(const float* x, int64_t n) {
  if (n <= 0) return 0;
  double sum = 0, squares = 0;
  SumAndSquares(x, n, &sum, &squares);
  return squares / n;
}

bool AccumulateChecked(const float* g, int64_t n, float* v) {
  Int8 bad = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Vec8 sum = Load(v + i) + Load(g + i);
    Store(sum, v + i);
    bad |= NonFinite(sum);
  }
  bool finite = true;
  for (int l = 0; l < 8; ++l) finite &= bad[l] == 0;
  for (; i < n; ++i) {
    v[i] += g[i];
    finite &= std::isfinite(v[i]);
  }
  return finite;
}

void ImportanceOverWeight(const float* v, const float* w, float epsilon, int64_t n, float* out,
                          double* sum, double* sum_squares) {
  const Vec8 eps = Vec8{} + epsilon;
  BlockedSumAndSquares(
      n,
      [=](int64_t i) {
        const Vec8 x = Abs(Load(v + i)) / (Abs(Load(w + i)) + eps);
        Store(x, out + i);
        return x;
      },
      [=](int64_t i) { return out[i] = std::fabs(v[i]) / (std::fabs(w[i]) + epsilon); }, sum,
      sum_squares);
}

namespace {
// Whether any lane of a comparison's result is set: one instruction with AVX (GCC's
// vector extensions have no such test, and reading the lanes out one by one cost
// more than the comparisons).
bool AnyLane(const Int8& mask) {
#ifdef __AVX__
  __m256i bits;
  std::memcpy(&bits, &mask, sizeof bits);
  return !_mm256_testz_si256(bits, bits);
#else
  typedef int64_t Int4 __attribute__((vector_size(32)));
  const Int4 pairs = (Int4)mask;
  return (pairs[0] | pairs[1] | pairs[2] | pairs[3]) != 0;
#endif
}
}  // namespace

void AppendAtLeast(const float* x, int64_t n, float threshold, std::vector<int32_t>* out) {
  const Vec8 t = Vec8{} + threshold;
  // Pieces of kPiece elements: their hits go to a local buffer without a branch per
  // element (an index is written every time and kept when it hits), and groups of 8
  // without a hit, most of them at the densities this serves,, are skipped whole.
  constexpr int64_t kPiece = 4096;
  int32_t hits[kPiece];
  for (int64_t begin = 0; begin < n; begin += kPiece) {
    const int64_t end = std::min(n, begin + kPiece);
    int64_t count = 0, i = begin;
    for (; i + 8 <= end; i += 8) {
      const Int8 hit = Load(x + i) >= t;
      if (!AnyLane(hit)) continue;
      for (int l = 0; l < 8; ++l) {
        hits[count] = static_cast<int32_t>(i + l);
        count -= hit[l];  // -1 where it hits
      }
    }
    for (; i < end; ++i) {
      hits[count] = static_cast<int32_t>(i);
      count += x[i] >= threshold;
    }
    out->insert(out->end(), hits, hits + count);
  }
}

void AppendStochasticDraw(const int32_t* last, const float* known, int64_t n, int64_t iter,
                          float mean_known, float scale, uint32_t seed,
                          std::vector<int32_t>* out) {
  typedef uint32_t U8 __attribute__((vector_size(32)));
  const Vec8 one = Vec8{} + 1.f, mean = Vec8{} + mean_known, s = Vec8{} + scale;
  const Vec8 unit = Vec8{} + 1.0f / 16777216.0f;
  const Int8 now = Int8{} + static_cast<int32_t>(iter);
  const U8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // DrawUniform and DrawKeeps (shared_random.hpp) for eight coordinates, operation
    // for operation.
    U8 x = (U8{} + seed) + (lane + static_cast<uint32_t>(i)) * 0x9e3779b9u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    const Vec8 u = __builtin_convertvector((Int8)(x >> 8), Vec8) * unit;
    Int8 l;
    std::memcpy(&l, last + i, sizeof l);
    const Vec8 age = __builtin_convertvector(now - l, Vec8);
    const Vec8 weight = known ? age * (Load(known + i) + mean) : age;
    Vec8 p = s * weight;
    p = p < one ? p : one;
    const Int8 hit = u < p;
    if (!AnyLane(hit)) continue;
    for (int j = 0; j < 8; ++j) {
      if (hit[j]) out->push_back(static_cast<int32_t>(i + j));
    }
  }
  for (; i < n; ++i) {
    const float age = static_cast<float>(iter - last[i]);
    const float weight = known ? age * (known[i] + mean_known) : age;
    if (DrawKeeps(seed, static_cast<uint32_t>(i), weight, scale)) out->push_back(static_cast<int32_t>(i));
  }
}

void AgeSums(const int32_t* last, const float* known, int64_t n, int64_t iter, double* sum_known,
             double* sum_age, double* sum_age_known) {
  // A block's lane adds kSumBlock / 8 ages, whole numbers: the age sums are exact while
  // ages stay below 2^17 steps. The products are rounded once, to float.
  double total_known = 0, total_age = 0, total_age_known = 0;
  const Vec8 now = Vec8{} + static_cast<float>(iter);
  int64_t i = 0;
  while (i + 8 <= n) {
    const int64_t end = std::min(n, i + kSumBlock);
    Vec8 k = {}, a = {}, ak = {};
    for (; i + 8 <= end; i += 8) {
      Int8 l;
      std::memcpy(&l, last + i, sizeof l);
      const Vec8 age = now - __builtin_convertvector(l, Vec8);
      const Vec8 m = known ? Load(known + i) : Vec8{};
      k += m;
      a += age;
      ak += age * m;
    }
    total_known += LaneTotal(k, Vec8{});
    total_age += LaneTotal(a, Vec8{});
    total_age_known += LaneTotal(ak, Vec8{});
  }
  for (; i < n; ++i) {
    const double age = static_cast<double>(iter - last[i]);
    const float m = known ? known[i] : 0.f;
    total_known += m;
    total_age += age;
    total_age_known += age * m;
  }
  *sum_known = total_known;
  *sum_age = total_age;
  *sum_age_known = total_age_known;
}

}  // namespace caffe
