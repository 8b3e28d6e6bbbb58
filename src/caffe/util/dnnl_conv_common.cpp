#ifdef USE_DNNL

#include "caffe/util/dnnl_conv_common.hpp"

#include <cstdlib>
#include <memory>

#include <glog/logging.h>

#include "caffe/util/dnnl_context.hpp"

namespace caffe {

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

struct ScratchSlots {
  std::unique_ptr<float, FreeDeleter> buffer[kNumScratchSlots];
  size_t floats[kNumScratchSlots] = {};
};

}  // namespace

float* DnnlScratch(DnnlScratchSlot slot, size_t floats) {
  thread_local ScratchSlots slots;
  if (floats > slots.floats[slot]) {
    // Rounded up to whole cache lines, as aligned_alloc requires a multiple of 64.
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    CHECK(p != nullptr) << "out of memory for a " << bytes << "-byte oneDNN scratch buffer";
    slots.buffer[slot].reset(p);
    slots.floats[slot] = bytes / sizeof(float);
  }
  return slots.buffer[slot].get();
}

void DnnlScratchBridge::Init(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
                             DnnlScratchSlot slot) {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  same_ = plain == wanted;
  slot_ = slot;
  // DNNL_MEMORY_NONE: handles are set before every use.
  user_ = dnnl::memory(plain, engine, DNNL_MEMORY_NONE);
  if (same_) {
    internal_ = dnnl::memory();
    to_internal_ = dnnl::reorder();
    to_user_ = dnnl::reorder();
    floats_ = 0;
  } else {
    internal_ = dnnl::memory(wanted, engine, DNNL_MEMORY_NONE);
    to_internal_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain, engine, wanted));
    to_user_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, wanted, engine, plain));
    // Blocked layouts pad channels: size the buffer from the descriptor, not the dims.
    floats_ = (wanted.get_size() + sizeof(float) - 1) / sizeof(float);
  }
}

void DnnlScratchBridge::PointAtScratch() { internal_.set_data_handle(DnnlScratch(slot_, floats_)); }

dnnl::memory DnnlScratchBridge::Read(const float* data) {
  user_.set_data_handle(const_cast<float*>(data));
  if (same_) return user_;
  PointAtScratch();
  to_internal_.execute(ThreadDnnlContext().stream,
                       {{DNNL_ARG_FROM, user_}, {DNNL_ARG_TO, internal_}});
  return internal_;
}

dnnl::memory DnnlScratchBridge::Write(float* data) {
  user_.set_data_handle(data);
  if (same_) return user_;
  PointAtScratch();
  return internal_;
}

void DnnlScratchBridge::Commit(float* data) {
  if (same_) return;
  user_.set_data_handle(data);
  to_user_.execute(ThreadDnnlContext().stream, {{DNNL_ARG_FROM, internal_}, {DNNL_ARG_TO, user_}});
}

}  // namespace caffe

#endif  // USE_DNNL
