// libFuzzer target: see caffe::fuzz::Caffemodel in fuzz_entry_points.hpp.
#include <cstddef>
#include <cstdint>

#include "fuzz_entry_points.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  caffe::fuzz::Initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  caffe::fuzz::Caffemodel(data, size);
  return 0;
}
