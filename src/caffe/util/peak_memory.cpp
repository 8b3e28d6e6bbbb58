#include "caffe/util/peak_memory.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

#include "caffe/util/device_alternate.hpp"

namespace caffe {

double PeakResidentMegabytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      double kilobytes = 0;
      if (fields >> kilobytes) return kilobytes / 1024.0;
    }
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // KB on Linux
}

double DeviceMemoryInUseMegabytes() {
#ifdef USE_CUDA
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<double>(total_bytes - free_bytes) / (1024.0 * 1024.0);
#else
  return -1.0;
#endif
}

}  // namespace caffe
