// What every oneDNN (DNNL) layer shares: one CPU engine and stream per thread, the
// thread count primitives are built for (caffe::NumThreads(), applied to oneDNN's
// OpenMP runtime), and a bridge between a blob's plain row-major layout and the
// layout a primitive picked. Only built with USE_DNNL.
#ifndef CAFFE_UTIL_DNNL_CONTEXT_HPP_
#define CAFFE_UTIL_DNNL_CONTEXT_HPP_

#ifdef USE_DNNL

#include <string>

#include <dnnl.hpp>

#include "caffe/util/error.hpp"
#include "caffe/util/num_threads.hpp"

namespace caffe {

struct DnnlContext {
  dnnl::engine engine;
  dnnl::stream stream;
};

// The calling thread's engine and stream. oneDNN objects are cheap to share within a
// thread; streams must not be used from two threads at once, hence one per thread.
DnnlContext& ThreadDnnlContext();

// The thread count oneDNN runs with on this thread: caffe::NumThreads(), pushed into
// OpenMP when it changed. Layers keep it with their primitives and rebuild them when
// it changes, because oneDNN sizes its work split when a primitive is created.
int DnnlThreads();

// Plain row-major float32 descriptor (NCHW for 4-d, OI for 2-d, ...).
dnnl::memory::desc PlainDesc(const dnnl::memory::dims& dims);
// N x C x H x W in the channel-blocked layout oneDNN's vector kernels want (16
// channels per block with AVX-512, else 8). For primitives that cannot take
// format_tag::any and whose plain-layout kernels are slow (LRN, batch norm).
dnnl::memory::desc ChannelBlockedDesc(const dnnl::memory::dims& dims);

// Whether `implementation` (a primitive descriptor's impl_info_str()) names one of
// oneDNN's reference implementations ("ref:...", "simple_nchw:..."), which it picks
// when this CPU has no vector kernel for the layout: plain loops, often slower than
// the project's own reference layers.
bool IsOneDnnReferenceKernel(const std::string& implementation);

// Carries one tensor across the boundary between a blob (plain layout, user memory)
// and a primitive that may want another layout. When the layouts agree the primitive
// works on the blob's memory directly; otherwise a private buffer and a reorder sit
// between them.
class DnnlLayoutBridge {
 public:
  DnnlLayoutBridge() = default;
  void Init(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted);
  bool initialized() const { return initialized_; }
  bool reorders() const { return !same_; }

  // Memory for the primitive to read, holding `data` (reordered when needed).
  dnnl::memory Read(const float* data);
  // Memory for the primitive to write; call Commit(data) after it ran.
  dnnl::memory Write(float* data);
  // Moves what the primitive wrote into `data` (no-op when no reorder is needed).
  void Commit(float* data);
  // The private buffer in the primitive's layout (empty when no reorder is needed):
  // what the primitive last wrote or read, for a layer that wants to keep it.
  const dnnl::memory& internal() const { return internal_; }

 private:
  bool initialized_ = false;
  bool same_ = true;
  dnnl::memory user_;
  dnnl::memory internal_;
  dnnl::reorder to_internal_;
  dnnl::reorder to_user_;
};

}  // namespace caffe

#endif  // USE_DNNL
#endif  // CAFFE_UTIL_DNNL_CONTEXT_HPP_
