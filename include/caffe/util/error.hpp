// The user-facing error type every part raises for bad input, and the vocabulary
// aliases the code base is written against.
#ifndef CAFFE_UTIL_ERROR_HPP_
#define CAFFE_UTIL_ERROR_HPP_

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace caffe {

using std::shared_ptr;
using std::string;
using std::vector;

// Raised for anything a user can get wrong: malformed files, bad shapes, bad flags.
// The message is one line naming where (file:line, layer, blob) and what was expected.
// Internal invariants use glog CHECK instead, because they are bugs, not input.
class Error : public std::runtime_error {
 public:
  // `layer`: the net layer the error is about, when there is one; the net uses it to
  // put the layer's line in its file into the message.
  explicit Error(const string& what, string layer = "")
      : std::runtime_error(what), layer_(std::move(layer)) {}
  const string& layer() const { return layer_; }

 private:
  string layer_;
};

// Builds an Error message with stream syntax and throws it when the statement ends:
//   if (bad) ErrorBuilder() << "layer '" << name << "': ...";
class ErrorBuilder {
 public:
  ErrorBuilder() = default;
  explicit ErrorBuilder(const string& prefix) { stream_ << prefix; }
  // An error about net layer `layer` (Error::layer), its message starting with `prefix`.
  ErrorBuilder(const string& prefix, const string& layer) : layer_(layer) { stream_ << prefix; }
  ErrorBuilder(const ErrorBuilder&) = delete;
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  // Names the layer the error is about (Error::layer).
  ErrorBuilder& AboutLayer(const string& name) {
    layer_ = name;
    return *this;
  }
  [[noreturn]] ~ErrorBuilder() noexcept(false) { throw Error(stream_.str(), layer_); }

 private:
  std::ostringstream stream_;
  string layer_;
};

// Throws caffe::Error unless `condition` holds; stream the message after it.
#define CAFFE_REQUIRE(condition) \
  if (condition) {               \
  } else                         \
    ::caffe::ErrorBuilder()

}  // namespace caffe

#endif  // CAFFE_UTIL_ERROR_HPP_
