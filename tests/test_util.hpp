// Small helpers shared by test suites.
#ifndef CAFFE_TESTS_TEST_UTIL_HPP_
#define CAFFE_TESTS_TEST_UTIL_HPP_

#include <functional>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/solver.hpp"

namespace caffe {

// Fills a blob's data with uniform values in [lo, hi] from a fixed seed.
void FillUniform(Blob* blob, float lo, float hi, uint64_t seed = 1701);
void FillGaussian(Blob* blob, float stddev, uint64_t seed = 1701);
// Sets a blob's data to `values` (as many as it holds; fails the test otherwise).
void SetValues(Blob* blob, const std::vector<float>& values);
// Fills a blob with distinct values 0.05 apart in an order drawn from `seed`: max
// pooling then has no ties, and a finite-difference step of 0.01 never changes which
// input is a window's maximum.
void FillDistinct(Blob* blob, uint64_t seed);
// Expects actual[i] == expected[i] exactly for every i; `what` names the array.
void ExpectExactValues(const float* actual, const std::vector<float>& expected, const char* what);
// Parses a text-format message, failing the test on syntax errors.
LayerParameter ParseLayer(const std::string& text);
NetParameter ParseNet(const std::string& text);
SolverParameter ParseSolver(const std::string& text);
// A CPU SGD solver (rate 0.05, momentum 0.9, weight decay 0.001, seed 7) over the net
// in `net_text`, for tests that train two variants of a net side by side.
shared_ptr<Solver> MakeSgdSolver(const std::string& net_text);
// A fresh empty folder under the build tree for a test's files.
std::string MakeTempDir(const std::string& tag);
// Path to ../shared/compat, or "" when it is absent (tests then skip).
std::string CompatDir();
// The message of the caffe::Error that `action` throws, or "<no error>" when it throws none.
std::string ErrorOf(const std::function<void()>& action);
// Runs a shell command, returning its exit status; output goes to *output if given.
int RunCommand(const std::string& command, std::string* output = nullptr);

}  // namespace caffe

#endif  // CAFFE_TESTS_TEST_UTIL_HPP_
