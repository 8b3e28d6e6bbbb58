// An optional ceiling on the host memory that blobs hold at once. Off by default; a
// process that builds nets from untrusted files (the fuzz targets, a model-checking
// service) sets it so an absurd `dim:` or `num_output:` becomes a caffe::Error at
// the allocation instead of exhausting the machine.
#ifndef CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_
#define CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_

#include <cstddef>

namespace caffe {

// 0 removes the limit. Allocations already made are not affected.
void SetHostMemoryLimit(size_t bytes);
size_t HostMemoryLimit();
// Bytes of host memory that SyncedMemory buffers hold right now.
size_t HostMemoryInUse();

}  // namespace caffe

#endif  // CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_
