// What a gradient exchange did: elements and bytes sent, time per phase, and per
// parameter blob the selection it made. Summed over a display window for the log,
// and written one row per step and blob to a CSV for plots (-sync_stats).
#ifndef CAFFE_SYNC_EXCHANGE_STATS_HPP_
#define CAFFE_SYNC_EXCHANGE_STATS_HPP_

#include <cstdint>
#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace caffe {

struct BlobSelection {
  std::string name;
  int64_t elements = 0;
  int64_t sent = 0;        // values that travelled for this blob this step
  float threshold = 0;     // importance threshold used (0 when dense)
  float vmr = 0;           // variance-to-mean ratio of importance
  int leader = -1;         // rank whose selection was used (-1: none)
  int64_t index_bytes = 0; // bytes of the broadcast index set for this blob
  int64_t max_age = 0;     // after the step: the most steps a coordinate has waited
  double mean_age = 0;     // and the mean (written to the CSV only)
};

class ExchangeStats {
 public:
  // Phases of one step, in seconds: clipping the local gradient and adding it into
  // the residual; choosing what travels; the index message; packing the chosen values;
  // their all-reduce, or all-gather (TOPK_ALLGATHER); writing the applied gradient
  // back and clearing what was sent.
  // CONTROL: the stop/snapshot agreement after each step (AgreeOnAction). Its few
  // bytes wait behind what the step's collectives left in flight (a send completes when
  // the data is handed to the network, not when it arrives), so its time is wire time.
  // WAIT: where collectives run on a CommThread while backward goes on, the time the
  // step then waited for them after backward (the exposed part of BROADCAST, ALLREDUCE
  // and ALLGATHER, which count the collectives' whole time).
  enum Phase { ACCUMULATE, SELECT, BROADCAST, GATHER, ALLREDUCE, ALLGATHER, SCATTER, CONTROL, WAIT, kNumPhases };

  void BeginStep(int iter) { current_iter_ = iter; blobs_.clear(); }
  void AddBlob(const BlobSelection& blob) { blobs_.push_back(blob); }
  // Blob `index` of this step (in AddBlob order) waited this long (CSV only).
  void SetBlobAge(size_t index, int64_t max_age, double mean_age) {
    blobs_[index].max_age = max_age;
    blobs_[index].mean_age = mean_age;
  }
  bool writes_csv() const { return csv_ != nullptr; }
  // Values the rate limit cut short this step (max_relative_step).
  void AddCapped(int64_t count) {
    window_capped_ += count;
    total_capped_ += count;
  }
  int64_t window_capped() const { return window_capped_; }
  int64_t total_capped() const { return total_capped_; }
  // Summed values that arrived as exactly zero with FP16 or INT8 on the wire: their
  // roundings took all of them (they wait in the residuals). In an INT8 block, a value
  // below 1/254 of the block's largest does.
  void AddZeroArrivals(int64_t count) {
    window_zero_arrivals_ += count;
    total_zero_arrivals_ += count;
  }
  int64_t window_zero_arrivals() const { return window_zero_arrivals_; }
  int64_t total_zero_arrivals() const { return total_zero_arrivals_; }
  // Closes a step: `bytes_sent` is what this rank put on the wire, `dense_bytes`
  // what a dense ring all-reduce would have sent, `density` the target in force.
  // `steady`: the step counts in the after-warm-up totals (sparse_*): by default
  // every step below density 1; a method with a density ramp passes false until
  // its final density.
  void EndStep(int64_t elements, int64_t sent, int64_t bytes_sent, double dense_bytes,
               float density, bool steady);
  void EndStep(int64_t elements, int64_t sent, int64_t bytes_sent, double dense_bytes,
               float density) {
    EndStep(elements, sent, bytes_sent, dense_bytes, density, density < 1.f);
  }
  void AddTime(Phase phase, double seconds) { window_seconds_[phase] += seconds; }
  // Bytes sent between steps (data statistics averaged before a test or a
  // snapshot): they count in the window and the totals like a step's.
  void AddSideBytes(int64_t bytes);
  void ResetWindow();
  void OpenCsv(const std::string& path);

  int64_t window_steps() const { return window_steps_; }
  int64_t window_elements() const { return window_elements_; }
  int64_t window_sent() const { return window_sent_; }
  int64_t window_bytes() const { return window_bytes_; }
  double window_dense_bytes() const { return window_dense_bytes_; }
  double window_seconds(Phase phase) const { return window_seconds_[phase]; }
  float last_density() const { return last_density_; }
  // Totals since the start (for final reports and benchmarks).
  int64_t total_steps() const { return total_steps_; }
  int64_t total_elements() const { return total_elements_; }
  int64_t total_sent() const { return total_sent_; }
  int64_t total_bytes() const { return total_bytes_; }
  double total_dense_bytes() const { return total_dense_bytes_; }
  double total_seconds(Phase phase) const {
    return total_seconds_[phase] + window_seconds_[phase];
  }
  const std::vector<BlobSelection>& last_step_blobs() const { return blobs_; }
  // Totals over the steps after warm-up, the dense steps and any density ramp (see
  // EndStep's `steady`): the steady state the compression ratios describe.
  int64_t sparse_steps() const { return sparse_steps_; }
  int64_t sparse_elements() const { return sparse_elements_; }
  int64_t sparse_sent() const { return sparse_sent_; }
  int64_t sparse_bytes() const { return sparse_bytes_; }
  double sparse_dense_bytes() const { return sparse_dense_bytes_; }

 private:
  int current_iter_ = 0;
  std::vector<BlobSelection> blobs_;
  int64_t window_steps_ = 0, window_elements_ = 0, window_sent_ = 0, window_bytes_ = 0;
  double window_dense_bytes_ = 0;
  double window_seconds_[kNumPhases] = {};
  int64_t total_steps_ = 0, total_elements_ = 0, total_sent_ = 0, total_bytes_ = 0;
  double total_dense_bytes_ = 0;
  double total_seconds_[kNumPhases] = {};
  float last_density_ = 1;
  bool last_steady_ = false;
  int64_t window_capped_ = 0, total_capped_ = 0;
  int64_t window_zero_arrivals_ = 0, total_zero_arrivals_ = 0;
  int64_t sparse_steps_ = 0, sparse_elements_ = 0, sparse_sent_ = 0, sparse_bytes_ = 0;
  double sparse_dense_bytes_ = 0;
  std::unique_ptr<std::ofstream> csv_;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_EXCHANGE_STATS_HPP_
