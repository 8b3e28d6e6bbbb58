// Basic vocabulary shared by every part of the framework: the execution context, the
// user-facing error type, and the blob-vector aliases layers are written against.
#ifndef CAFFE_COMMON_HPP_
#define CAFFE_COMMON_HPP_

#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <glog/logging.h>

namespace caffe {

using std::shared_ptr;
using std::string;
using std::vector;

// Raised for anything a user can get wrong: malformed files, bad shapes, bad flags.
// The message is one line naming where (file:line, layer, blob) and what was expected.
// Internal invariants use glog CHECK instead, because they are bugs, not input.
class Error : public std::runtime_error {
 public:
  explicit Error(const string& what) : std::runtime_error(what) {}
};

// Builds an Error message with stream syntax and throws it when the statement ends:
//   if (bad) ErrorBuilder() << "layer '" << name << "': ...";
class ErrorBuilder {
 public:
  ErrorBuilder() = default;
  explicit ErrorBuilder(const string& prefix) { stream_ << prefix; }
  ErrorBuilder(const ErrorBuilder&) = delete;
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  [[noreturn]] ~ErrorBuilder() noexcept(false) { throw Error(stream_.str()); }

 private:
  std::ostringstream stream_;
};

// Throws caffe::Error unless `condition` holds; stream the message after it.
#define CAFFE_REQUIRE(condition) \
  if (condition) {               \
  } else                         \
    ::caffe::ErrorBuilder()

enum class Mode { CPU, GPU };

// Where and how a net runs, and the random stream it draws from. Owned by whoever
// owns the nets (solver, tool, test) and shared with every layer, instead of a
// process-wide singleton: two nets in one process can run on different devices.
class Context {
 public:
  explicit Context(uint64_t seed = kDefaultSeed) : rng_(seed) {}
  static constexpr uint64_t kDefaultSeed = 1701;

  Mode mode() const { return mode_; }
  void set_mode(Mode mode) { mode_ = mode; }
  int device_id() const { return device_id_; }
  void set_device_id(int id) { device_id_ = id; }
  // Data-parallel position: record sharding and per-rank seeds read these numbers.
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  void set_rank(int rank, int world_size) {
    rank_ = rank;
    world_size_ = world_size;
  }

  std::mt19937_64& rng() { return rng_; }
  void Seed(uint64_t seed) { rng_.seed(seed); }
  string SerializeRng() const;
  void DeserializeRng(const string& state);

 private:
  Mode mode_ = Mode::CPU;
  int device_id_ = 0;
  int rank_ = 0;
  int world_size_ = 1;
  std::mt19937_64 rng_;
};

// Number of CPU threads the project's own loops, BLAS and oneDNN may use.
int NumThreads();
void SetNumThreads(int threads);

}  // namespace caffe

#endif  // CAFFE_COMMON_HPP_
