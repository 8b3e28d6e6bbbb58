#ifdef USE_DNNL

#include "caffe/util/dnnl_context.hpp"

#include <dlfcn.h>

namespace caffe {

namespace {

// Debian's oneDNN runs on GNU OpenMP. The OpenMP library comes in only as oneDNN's own
// dependency (the build does not link -fopenmp), so the setter is looked up at run time
// instead of linked: with a non-OpenMP oneDNN it is simply absent and the thread count
// is oneDNN's default (OMP_NUM_THREADS or all cores).
using SetThreadsFn = void (*)(int);

SetThreadsFn OpenMpSetNumThreads() {
  static const SetThreadsFn fn =
      reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return fn;
}

}  // namespace

DnnlContext& ThreadDnnlContext() {
  thread_local DnnlContext context = [] {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return DnnlContext{engine, dnnl::stream(engine)};
  }();
  return context;
}

int DnnlThreads() {
  // The OpenMP thread count is a per-thread setting, so remember it per thread.
  thread_local int applied = 0;
  const int threads = NumThreads();
  if (threads != applied) {
    if (SetThreadsFn set = OpenMpSetNumThreads()) set(threads);
    applied = threads;
  }
  return threads;
}

dnnl::memory::desc PlainDesc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size());
  dnnl::memory::dim stride = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

bool IsOneDnnReferenceKernel(const std::string& implementation) {
  return implementation.rfind("ref", 0) == 0 || implementation.rfind("simple", 0) == 0;
}

dnnl::memory::desc ChannelBlockedDesc(const dnnl::memory::dims& dims) {
  const int isa = static_cast<int>(dnnl::get_effective_cpu_isa());
  const bool avx512 = (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32,
                            avx512 ? dnnl::memory::format_tag::nChw16c
                                   : dnnl::memory::format_tag::nChw8c);
}

void DnnlLayoutBridge::Init(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted) {
  const dnnl::engine& engine = ThreadDnnlContext().engine;
  same_ = plain == wanted;
  // DNNL_MEMORY_NONE: the handle is set before every use.
  user_ = dnnl::memory(plain, engine, DNNL_MEMORY_NONE);
  if (same_) {
    internal_ = dnnl::memory();
    to_internal_ = dnnl::reorder();
    to_user_ = dnnl::reorder();
  } else {
    internal_ = dnnl::memory(wanted, engine);
    to_internal_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain, engine, wanted));
    to_user_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, wanted, engine, plain));
  }
  initialized_ = true;
}

dnnl::memory DnnlLayoutBridge::Read(const float* data) {
  user_.set_data_handle(const_cast<float*>(data));
  if (same_) return user_;
  to_internal_.execute(ThreadDnnlContext().stream,
                       {{DNNL_ARG_FROM, user_}, {DNNL_ARG_TO, internal_}});
  return internal_;
}

dnnl::memory DnnlLayoutBridge::Write(float* data) {
  user_.set_data_handle(data);
  return same_ ? user_ : internal_;
}

void DnnlLayoutBridge::Commit(float* data) {
  if (same_) return;
  user_.set_data_handle(data);
  to_user_.execute(ThreadDnnlContext().stream, {{DNNL_ARG_FROM, internal_}, {DNNL_ARG_TO, user_}});
}

}  // namespace caffe

#endif  // USE_DNNL
