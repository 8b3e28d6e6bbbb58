#include "caffe/common.hpp"

#include <sstream>

namespace caffe {

string Context::SerializeRng() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void Context::DeserializeRng(const string& state) {
  std::istringstream in(state);
  in >> rng_;
  CAFFE_REQUIRE(!in.fail()) << "random generator state is corrupt";
}

}  // namespace caffe
