// An optional ceiling on the host memory that blobs hold at once. Off by default; a
// process that builds nets from untrusted files (the fuzz targets, a model-checking
// service) sets it so an absurd `dim:` or `num_output:` becomes a caffe::Error at
// the allocation instead of exhausting the machine.
#ifndef CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_
#define CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_

#include <cstddef>
#include <cstdint>

namespace caffe {

// 0 removes the limit. Allocations already made are not affected.
void SetHostMemoryLimit(size_t bytes);
size_t HostMemoryLimit();
// Bytes of host memory that SyncedMemory buffers hold right now.
size_t HostMemoryInUse();
// Whether `count` elements of `element_size` bytes could be allocated on the host: within
// the limit (when one is set) and within the machine's physical memory. Layers check their
// scratch vectors with it, because those are sized while the net is built, before any
// blob allocates, and std::bad_alloc names neither the layer nor the shape.
bool HostAllocationFits(int64_t count, size_t element_size);

}  // namespace caffe

#endif  // CAFFE_UTIL_HOST_MEMORY_LIMIT_HPP_
