// The execution context shared by a net and its layers, with the error type and the
// thread budget from util that every part of the core uses.
#ifndef CAFFE_COMMON_HPP_
#define CAFFE_COMMON_HPP_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <glog/logging.h>

#include "caffe/util/error.hpp"
#include "caffe/util/num_threads.hpp"

namespace caffe {

enum class Mode { CPU, GPU };

// What a layer's `engine: DEFAULT` resolves to (layer_engines.cpp). MEASURED: cuDNN in
// a GPU net, and in a CPU net the engine measured faster for the layer type
// (bench/README.md). The others send every DEFAULT layer to one engine, to compare
// engines on a whole net without editing it. A layer's explicit engine always wins.
enum class DefaultEngine { MEASURED, CAFFE, DNNL, CUDNN };

// Where and how a net runs, and the random stream it draws from. Owned by whoever
// owns the nets (solver, tool, test) and shared with every layer, instead of a
// process-wide singleton: two nets in one process can run on different devices.
class Context {
 public:
  explicit Context(uint64_t seed = kDefaultSeed) : rng_(seed) {}
  static constexpr uint64_t kDefaultSeed = 1701;

  Mode mode() const { return mode_; }
  void set_mode(Mode mode) { mode_ = mode; }
  int device_id() const { return device_id_; }
  void set_device_id(int id) { device_id_ = id; }
  // Read when layers are created, so it must be set before the net is built. The thread
  // count is deliberately not consulted: -threads 1 and -threads 2 build the same net.
  DefaultEngine default_engine() const { return default_engine_; }
  void set_default_engine(DefaultEngine engine) { default_engine_ = engine; }
  // Data-parallel position: record sharding and per-rank seeds read these numbers.
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  void set_rank(int rank, int world_size) {
    rank_ = rank;
    world_size_ = world_size;
  }

  std::mt19937_64& rng() { return rng_; }
  void Seed(uint64_t seed) { rng_.seed(seed); }
  string SerializeRng() const;
  void DeserializeRng(const string& state);

 private:
  Mode mode_ = Mode::CPU;
  int device_id_ = 0;
  DefaultEngine default_engine_ = DefaultEngine::MEASURED;
  int rank_ = 0;
  int world_size_ = 1;
  std::mt19937_64 rng_;
};

}  // namespace caffe

#endif  // CAFFE_COMMON_HPP_
