// OpenBLAS' own single-precision GEMM rate, through caffe::math::gemm, for square
// matrices at a given thread count: the ceiling against which bench/cpu_vs_torch
// reads each convolution's achieved GFLOP/s.
//
//   sgemm_gflops [threads=1] [sizes=1024,2048] [repeats=5]
//
// Prints one line per size: "sgemm n=N threads=T gflops=G" (G: median over repeats
// of 2 N^3 / time, after one untimed call).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/util/math_functions.hpp"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const std::string sizes_arg = argc > 2 ? argv[2] : "1024,2048";
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  caffe::SetNumThreads(std::max(1, threads));

  std::vector<int> sizes;
  std::stringstream list(sizes_arg);
  for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::atoi(item.c_str()));

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (int n : sizes) {
    std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
    for (float& v : a) v = uniform(rng);
    for (float& v : b) v = uniform(rng);
    auto gemm = [&] {
      caffe::math::gemm(caffe::math::NoTrans, caffe::math::NoTrans, n, n, n, 1.f, a.data(),
                        b.data(), 0.f, c.data());
    };
    gemm();
    std::vector<double> gflops;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      gemm();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      gflops.push_back(2.0 * n * n * double(n) / s * 1e-9);
    }
    std::sort(gflops.begin(), gflops.end());
    std::printf("sgemm n=%d threads=%d gflops=%.2f\n", n, caffe::NumThreads(),
                gflops[gflops.size() / 2]);
  }
  return 0;
}
