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

// One dataset of an HDF5 file in the HDF5 tests: its path in the file ("data/ip/0"),
// shape and values, and the type it is stored as on disk.
struct Hdf5TestDataset {
  enum class Stored { kFloat32, kFloat64, kInt32 };
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
  Stored stored = Stored::kFloat32;
};
// Writes a new HDF5 file holding `datasets` (making the groups on their paths), and
// reads one back, with the HDF5 C library itself rather than caffe's util/hdf5, so that
// a bug there cannot cancel out between writing and reading. Failures fail the test.
void WriteHdf5TestFile(const std::string& path, const std::vector<Hdf5TestDataset>& datasets);
Hdf5TestDataset ReadHdf5TestDataset(const std::string& path, const std::string& name);
// The names in group `group` of the HDF5 file `path` ("/" for the root), sorted.
std::vector<std::string> Hdf5TestGroupMembers(const std::string& path, const std::string& group);

}  // namespace caffe

#endif  // CAFFE_TESTS_TEST_UTIL_HPP_
