// One thread pool for the project's own loops: OpenMP's, which oneDNN runs on too,
// sized by caffe::NumThreads() (the `-threads` knob that also sizes OpenBLAS and
// oneDNN), so that nothing runs more threads than that knob allows. Loops below a
// size threshold stay on the calling thread: waking a team costs microseconds, more
// than a small layer's work.
//
// Only for loops whose per-element result does not depend on how the range is
// split (elementwise maps, gathers, scatters to distinct indices): chunks run in any
// order, so reductions and order-dependent updates must not use it.
//
// Only parallel_for.cpp is compiled with OpenMP; callers pass their loop body through
// a function pointer, so the rest of the library keeps its ordinary compile flags.
#ifndef CAFFE_UTIL_PARALLEL_FOR_HPP_
#define CAFFE_UTIL_PARALLEL_FOR_HPP_

#include <cstdint>
#include <type_traits>

namespace caffe {

// Elements below which a loop runs serially.
constexpr int64_t kParallelMinElements = 32768;

// Elements per cache-sized piece, for a body that makes several passes over its range
// (y = a + b + ..., or one input read into several outputs): 16 KB per float array,
// so a piece written by one pass is still in L1 when the next pass reads it.
constexpr int64_t kL1PieceElements = 4096;

// ParallelFor's min_elements for a loop over items (planes, channels) of
// elements_per_item elements each: items enough that a thread gets about
// kParallelMinElements / 2 elements, since ParallelFor counts items, not elements.
inline int64_t MinItemsFor(int64_t elements_per_item) {
  const int64_t per_item = elements_per_item > 1 ? elements_per_item : 1;
  const int64_t items = kParallelMinElements / per_item;
  return items > 1 ? items : 1;
}

// How many threads a loop over n elements gets: 1 below min_elements, inside a
// parallel region already, or in a build without OpenMP; else up to NumThreads(),
// with at least min_elements / 2 elements per thread.
int ParallelThreads(int64_t n, int64_t min_elements = kParallelMinElements);

namespace internal {
using ChunkFn = void (*)(const void* body, int64_t begin, int64_t end);
// Splits [0, n) into `threads` contiguous chunks and runs fn(body, begin, end) on each.
void RunChunks(int64_t n, int threads, ChunkFn fn, const void* body);
}  // namespace internal

// Calls body(begin, end) on contiguous, disjoint chunks that cover [0, n), each on
// its own thread. The body should run a plain loop over its chunk, so that the
// compiler vectorises it as it would the serial loop.
template <typename Body>
void ParallelFor(int64_t n, const Body& body, int64_t min_elements = kParallelMinElements) {
  if (n <= 0) return;
  const int threads = ParallelThreads(n, min_elements);
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
  internal::RunChunks(
      n, threads,
      [](const void* fn, int64_t begin, int64_t end) {
        (*static_cast<const Body*>(fn))(begin, end);
      },
      &body);
}

}  // namespace caffe

#endif  // CAFFE_UTIL_PARALLEL_FOR_HPP_
