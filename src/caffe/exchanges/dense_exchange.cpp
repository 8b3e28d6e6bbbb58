#include "caffe/exchanges/dense_exchange.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/state_codec.hpp"
#include "caffe/util/error.hpp"

namespace caffe {

void DenseExchange::Prepare(const vector<Blob*>& params) {
  vector<int64_t> sizes;
  for (Blob* p : params) sizes.push_back(p->count());
  if (!plan_.Matches(sizes)) {
    const int64_t capacity = std::max<int64_t>(
        1, static_cast<int64_t>(param_.bucket_size_mb() * 1024 * 1024 / sizeof(float)));
    const bool ready_known = blobs_.ready_layers.size() == sizes.size();
    plan_ = BucketPlan(sizes, ready_known ? blobs_.ready_layers : vector<int>(), capacity);
  }
  const bool half = param_.value_encoding() == SyncParameter::FP16;
  if (half) {
    if (carry_.empty()) {
      for (int64_t n : sizes) carry_.emplace_back(n, 0.f);
    }
    CAFFE_REQUIRE(carry_.size() == sizes.size())
        << "sync state (DENSE, FP16) holds " << carry_.size() << " blobs, this net exchanges "
        << sizes.size();
    for (size_t b = 0; b < sizes.size(); ++b) {
      CAFFE_REQUIRE(static_cast<int64_t>(carry_[b].size()) == sizes[b])
          << "sync state (DENSE, FP16) blob " << b << " holds " << carry_[b].size()
          << " values, the net's has " << sizes[b];
    }
  }
  if (!reducer_) {
    // Half-precision values go over the host path only.
    if (blobs_.gpu && device_comm_ && !half) {
      reducer_ = CreateDeviceBucketReducer(device_comm_.get(), comm_.get(), &stats_);
    }
    if (!reducer_) {
      // Each bucket's all-reduce runs on a thread of its own while backward goes on.
      reducer_ = std::make_unique<HostBucketReducer>(comm_.get(), &stats_, half ? &carry_ : nullptr,
                                                     /*in_background=*/true);
    }
  }
}

namespace {
constexpr uint32_t kDenseStateMagic = 0x31364644;  // "DF16"
}  // namespace

std::string DenseExchange::SaveState() const {
  if (carry_.empty()) return {};
  std::string out;
  const uint32_t magic = kDenseStateMagic;
  out.append(reinterpret_cast<const char*>(&magic), 4);
  AppendFloatArrays(carry_, &out);
  return out;
}

void DenseExchange::RestoreState(const std::string& state) {
  carry_.clear();
  if (state.empty()) return;
  uint32_t magic = 0;
  CAFFE_REQUIRE(state.size() >= 4)
      << "sync state (DENSE) is truncated (" << state.size() << " bytes)";
  std::memcpy(&magic, state.data(), 4);
  CAFFE_REQUIRE(magic == kDenseStateMagic) << "not a DENSE sync state (bad magic)";
  size_t pos = 4;
  vector<vector<float>> carry = ReadFloatArrays(state, &pos, "sync state (DENSE)");
  CAFFE_REQUIRE(pos == state.size()) << "sync state (DENSE) has trailing bytes";
  // A state of another net is caught here, naming the file, rather than at the first step.
  CAFFE_REQUIRE(blobs_.sizes.empty() || carry.size() == blobs_.sizes.size())
      << "sync state holds " << carry.size() << " blob(s), this net exchanges "
      << blobs_.sizes.size();
  for (size_t b = 0; b < carry.size() && !blobs_.sizes.empty(); ++b) {
    CAFFE_REQUIRE(static_cast<int64_t>(carry[b].size()) == blobs_.sizes[b])
        << "sync state blob " << b << " holds " << carry[b].size() << " values, the net's has "
        << blobs_.sizes[b];
  }
  if (param_.value_encoding() != SyncParameter::FP16) {
    LOG(WARNING) << "sync state holds DENSE's FP16 carry, but value_encoding is FP32 now: it is "
                    "dropped";
    return;
  }
  carry_ = std::move(carry);
}

void DenseExchange::BeginBackward(int iter, const vector<Blob*>& params) {
  if (comm_->size() < 2) return;
  Prepare(params);
  params_ = params;
  stats_.BeginStep(iter);
  bytes_before_ = BytesSentSoFar();
  started_ = 0;
  in_step_ = true;
}

void DenseExchange::OnLayerBackward(int layer) {
  if (!in_step_) return;
  const int ready = plan_.ReadyCount(layer);
  if (ready > started_) {
    buckets_started_early_ += ready - started_;
    StartReadyBuckets(ready);
  }
}

void DenseExchange::StartReadyBuckets(int count) {
  while (started_ < count) reducer_->Start(plan_.buckets()[started_++], params_);
}

void DenseExchange::Exchange(int iter, const vector<Blob*>& params) {
  int64_t total = 0;
  for (Blob* p : params) total += p->count();
  if (comm_->size() < 2) {
    stats_.BeginStep(iter);
    stats_.EndStep(total, total, 0, DenseRingBytes(total), 1.f);
    return;
  }
  if (!in_step_) BeginBackward(iter, params);  // no early start: reduce everything now
  CHECK(params == params_) << "DENSE exchange: parameters changed within a step";
  StartReadyBuckets(static_cast<int>(plan_.buckets().size()));
  reducer_->Finish();
  in_step_ = false;
  stats_.EndStep(total, total, BytesSentSoFar() - bytes_before_, DenseRingBytes(total), 1.f);
}

REGISTER_EXCHANGE(DENSE, DenseExchange);

}  // namespace caffe
