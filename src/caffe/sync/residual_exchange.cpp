#include "caffe/sync/residual_exchange.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

#include "caffe/util/device_alternate.hpp"
#include "caffe/util/math_functions.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

namespace {
double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
constexpr uint32_t kStateMagic = 0x49575052;  // "IWPR"
}  // namespace

bool ResidualExchange::TakeOverMomentum(float momentum) {
  if (!param_.momentum_correction()) return false;
  momentum_ = momentum;
  momentum_correction_ = true;
  return true;
}

float ResidualExchange::DensityAt(int iter) const {
  if (iter < param_.warmup_iter()) return 1.f;
  const int after = iter - param_.warmup_iter();
  const int stage = after / param_.density_schedule_iter();
  if (stage < param_.density_schedule_size()) return param_.density_schedule(stage);
  return param_.density();
}

void ResidualExchange::EnsureState(const vector<Blob*>& params) {
  if (!state_decided_) {
    // The solver sets GPU mode before the first step; from then on the state stays
    // on one side.
#ifdef USE_CUDA
    on_device_ = gpu_mode_ && SupportsDeviceResiduals() && HasCudaDevice();
#endif
    state_decided_ = true;
  }
  if (!residual_.empty()) {
    // Restored state (or a previous step) must describe exactly these blobs.
    CAFFE_REQUIRE(residual_.size() == params.size())
        << "sync state holds " << residual_.size() << " blobs, the net has " << params.size();
    for (size_t b = 0; b < params.size(); ++b) {
      CAFFE_REQUIRE(static_cast<int64_t>(residual_[b].size()) == params[b]->count())
          << "sync state blob " << b << " holds " << residual_[b].size() << " values, the net's has "
          << params[b]->count();
    }
  } else {
    for (Blob* p : params) {
      residual_.emplace_back(p->count(), 0.f);
      velocity_.emplace_back(momentum_correction_ ? p->count() : 0, 0.f);
    }
  }
#ifdef USE_CUDA
  if (on_device_ && (device_behind_ || device_residual_.size() != residual_.size())) UploadState();
#endif
}

float ResidualExchange::LocalClipNorm() const {
  return param_.clip_norm() > 0 ? param_.clip_norm() / std::sqrt(static_cast<float>(comm_->size()))
                                : 0.f;
}

const float* ResidualExchange::ResidualData(size_t b) const {
#ifdef USE_CUDA
  if (on_device_) return device_residual_[b].as<float>();
#endif
  return residual_[b].data();
}

void ResidualExchange::SyncHostMirror() const {
#ifdef USE_CUDA
  if (!host_behind_) return;
  for (size_t b = 0; b < residual_.size(); ++b) {
    device_residual_[b].Download(residual_[b].data(), residual_[b].size() * sizeof(float));
    // Only momentum correction keeps u on the device (UploadState); a restored state
    // may still hold host velocities that the device never got.
    if (momentum_correction_) {
      device_velocity_[b].Download(velocity_[b].data(), velocity_[b].size() * sizeof(float));
    }
  }
  host_behind_ = false;
#endif
}

void ResidualExchange::ClipAndAccumulate(const vector<Blob*>& params) {
#ifdef USE_CUDA
  if (on_device_) {
    ClipAndAccumulateOnDevice(params);
    return;
  }
#endif
  const float clip = LocalClipNorm();
  for (size_t b = 0; b < params.size(); ++b) {
    Blob* p = params[b];
    const int64_t n = p->count();
    float* g = p->mutable_cpu_diff();
    if (clip > 0) {
      // Local clipping per blob: keeps one rank's outlier gradient from dominating
      // the residual it will carry for many steps.
      const float norm = std::sqrt(math::dot(n, g, g));
      if (norm > clip) math::scal(n, clip / norm, g);
    }
    float* v = residual_[b].data();
    // Elementwise, so the result does not depend on how threads split the range:
    // every rank gets the same bits.
    if (momentum_correction_) {
      float* u = velocity_[b].data();
      const float momentum = momentum_;
      ParallelFor(n, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          u[i] = momentum * u[i] + g[i];
          v[i] += u[i];
        }
      });
    } else {
      ParallelFor(n, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) v[i] += g[i];
      });
    }
  }
}

void ResidualExchange::Exchange(int iter, const vector<Blob*>& params) {
  EnsureState(params);
  stats_.BeginStep(iter);
  const int64_t bytes_before = BytesSentSoFar();
  auto start = std::chrono::steady_clock::now();
  ClipAndAccumulate(params);
  stats_.AddTime(ExchangeStats::SELECT, SecondsSince(start));

  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  const float density = DensityAt(iter);
  int64_t sent = 0;
  if (density >= 1.f) {
    vector<Selection> all(params.size());
    for (Selection& s : all) s.all = true;
    sent = ReduceSelected(params, all);
    for (size_t b = 0; b < params.size(); ++b) {
      stats_.AddBlob({b < param_names_.size() ? param_names_[b] : std::to_string(b),
                      params[b]->count(), params[b]->count(), 0.f, 0.f, -1, 0});
    }
  } else {
    sent = ExchangeSparse(iter, params, SparseDensity(params, density));
  }
  stats_.EndStep(total, sent, BytesSentSoFar() - bytes_before, DenseRingBytes(total), density);
}

float ResidualExchange::SparseDensity(const vector<Blob*>& params, float density) const {
  int64_t dense = 0, sparse = 0, sparse_blobs = 0;
  for (Blob* p : params) {
    if (IsDenseBlob(*p)) {
      dense += p->count();
    } else {
      sparse += p->count();
      ++sparse_blobs;
    }
  }
  if (sparse == 0) return density;
  // Small blobs always travel whole and count against the budget, so the large ones
  // get what is left: the step then sends density * (all elements) in total. Where the
  // small blobs alone exceed the budget (ResNet-20 at 1/64: 4,463 BatchNorm/Scale/bias
  // elements against 4,278), the large blobs keep a floor of a quarter of the target
  // density, so they still train; the step then sends more than the target.
  const double total = static_cast<double>(dense + sparse);
  const double floor = std::max<double>(density / 4.0 * sparse, static_cast<double>(sparse_blobs));
  const double left = std::max<double>(density * total - dense, floor);
  return static_cast<float>(std::min(1.0, left / sparse));
}

void ResidualExchange::ClearSent(size_t b, const vector<int32_t>& indices) {
  CHECK(!on_device_) << "ClearSent works on host residuals";
  float* v = residual_[b].data();
  float* u = momentum_correction_ ? velocity_[b].data() : nullptr;
  const int32_t* index = indices.data();
  // Indices are distinct, so threads never write the same element.
  ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) v[index[j]] = 0;
    if (u) {
      for (int64_t j = begin; j < end; ++j) u[index[j]] = 0;
    }
  });
}

void ResidualExchange::BroadcastMessage(std::string* message, int root) {
  if (comm_->size() < 2) return;
#ifdef USE_CUDA
  if (on_device_) {
    if (Communicator* device = DeviceCommunicator()) {
      BroadcastMessageOnDevice(message, root, device);
      return;
    }
  }
#endif
  // The others cannot know the length: it goes first.
  int64_t length = static_cast<int64_t>(message->size());
  comm_->Broadcast(&length, sizeof(length), root);
  message->resize(length);
  comm_->Broadcast(message->data(), length, root);
}

int64_t ResidualExchange::ReduceSelected(const vector<Blob*>& params,
                                         const vector<Selection>& selections) {
#ifdef USE_CUDA
  if (on_device_) return ReduceSelectedOnDevice(params, selections);
#endif
  auto start = std::chrono::steady_clock::now();
  int64_t total = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    total += selections[b].all ? params[b]->count()
                               : static_cast<int64_t>(selections[b].indices.size());
  }
  values_.resize(total);
  int64_t pos = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    const float* v = residual_[b].data();
    if (selections[b].all) {
      std::memcpy(values_.data() + pos, v, sizeof(float) * params[b]->count());
      pos += params[b]->count();
    } else {
      const vector<int32_t>& indices = selections[b].indices;
      const int32_t* index = indices.data();
      float* out = values_.data() + pos;
      ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) out[j] = v[index[j]];
      });
      pos += static_cast<int64_t>(indices.size());
    }
  }
  stats_.AddTime(ExchangeStats::SCATTER, SecondsSince(start));

  start = std::chrono::steady_clock::now();
  if (comm_->size() > 1 && total > 0) comm_->AllReduceSum(values_.data(), total);
  stats_.AddTime(ExchangeStats::ALLREDUCE, SecondsSince(start));

  start = std::chrono::steady_clock::now();
  const float inv = 1.f / comm_->size();
  pos = 0;
  for (size_t b = 0; b < params.size(); ++b) {
    Blob* p = params[b];
    const int64_t n = p->count();
    float* diff = p->mutable_cpu_diff();
    float* v = residual_[b].data();
    if (selections[b].all) {
      const float* in = values_.data() + pos;
      ParallelFor(n, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) diff[i] = in[i] * inv;
      });
      // A blob sent whole behaves like plain momentum SGD: its velocity u carries on
      // (masking u only matters where coordinates wait in the residual).
      std::fill(v, v + n, 0.f);
      pos += n;
    } else {
      std::fill(diff, diff + n, 0.f);
      const vector<int32_t>& indices = selections[b].indices;
      const int32_t* index = indices.data();
      const float* in = values_.data() + pos;
      ParallelFor(static_cast<int64_t>(indices.size()), [=](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) diff[index[j]] = in[j] * inv;
      });
      pos += static_cast<int64_t>(indices.size());
      ClearSent(b, selections[b].indices);
    }
  }
  stats_.AddTime(ExchangeStats::SCATTER, SecondsSince(start));
  return total;
}

std::string ResidualExchange::SaveState() const {
  SyncHostMirror();
  std::string out;
  auto put = [&out](const void* data, size_t bytes) {
    out.append(static_cast<const char*>(data), bytes);
  };
  const uint32_t magic = kStateMagic;
  const uint64_t blobs = residual_.size();
  const uint8_t has_velocity = momentum_correction_ ? 1 : 0;
  put(&magic, 4);
  put(&blobs, 8);
  put(&has_velocity, 1);
  for (size_t b = 0; b < residual_.size(); ++b) {
    const uint64_t n = residual_[b].size();
    put(&n, 8);
    put(residual_[b].data(), 4 * n);
    if (has_velocity) put(velocity_[b].data(), 4 * n);
  }
  return out;
}

void ResidualExchange::RestoreState(const std::string& state) {
  size_t pos = 0;
  auto get = [&](void* data, size_t bytes) {
    CAFFE_REQUIRE(pos + bytes <= state.size())
        << "sync state is truncated (" << state.size() << " bytes)";
    std::memcpy(data, state.data() + pos, bytes);
    pos += bytes;
  };
  uint32_t magic = 0;
  uint64_t blobs = 0;
  uint8_t has_velocity = 0;
  get(&magic, 4);
  CAFFE_REQUIRE(magic == kStateMagic) << "not a sync state file (bad magic)";
  get(&blobs, 8);
  get(&has_velocity, 1);
  CAFFE_REQUIRE(!has_velocity || momentum_correction_ || residual_.empty())
      << "sync state has momentum but momentum_correction is off";
  residual_.assign(blobs, {});
  velocity_.assign(blobs, {});
  for (uint64_t b = 0; b < blobs; ++b) {
    uint64_t n = 0;
    get(&n, 8);
    residual_[b].resize(n);
    get(residual_[b].data(), 4 * n);
    if (has_velocity) {
      velocity_[b].resize(n);
      get(velocity_[b].data(), 4 * n);
    } else if (momentum_correction_) {
      velocity_[b].assign(n, 0.f);
    }
  }
  CAFFE_REQUIRE(pos == state.size()) << "sync state has trailing bytes";
  // In GPU mode the next step uploads what was restored.
  device_behind_ = true;
  host_behind_ = false;
}

}  // namespace caffe
