#include "caffe/sync/state_codec.hpp"

#include <cstdint>
#include <cstring>

#include "caffe/util/error.hpp"

namespace caffe {

void AppendFloatArrays(const std::vector<std::vector<float>>& arrays, std::string* out) {
  const uint64_t count = arrays.size();
  out->append(reinterpret_cast<const char*>(&count), 8);
  for (const std::vector<float>& array : arrays) {
    const uint64_t length = array.size();
    out->append(reinterpret_cast<const char*>(&length), 8);
    out->append(reinterpret_cast<const char*>(array.data()), 4 * length);
  }
}

std::vector<std::vector<float>> ReadFloatArrays(const std::string& state, size_t* pos,
                                                const std::string& what) {
  auto read_count = [&](uint64_t* value) {
    CAFFE_REQUIRE(*pos <= state.size() && state.size() - *pos >= 8) << what << " is truncated";
    std::memcpy(value, state.data() + *pos, 8);
    *pos += 8;
  };
  uint64_t count = 0;
  read_count(&count);
  CAFFE_REQUIRE(count <= (state.size() - *pos) / 8) << what << " is truncated";
  std::vector<std::vector<float>> arrays(count);
  for (std::vector<float>& array : arrays) {
    uint64_t length = 0;
    read_count(&length);
    CAFFE_REQUIRE(length <= (state.size() - *pos) / 4) << what << " is truncated";
    array.resize(length);
    std::memcpy(array.data(), state.data() + *pos, 4 * length);
    *pos += 4 * length;
  }
  return arrays;
}

}  // namespace caffe
