#include "caffe/sync/exchange_stats.hpp"

#include "caffe/util/error.hpp"

namespace caffe {

void ExchangeStats::EndStep(int64_t elements, int64_t sent, int64_t bytes_sent,
                            double dense_bytes, float density, bool steady) {
  ++window_steps_;
  ++total_steps_;
  window_elements_ += elements;
  total_elements_ += elements;
  window_sent_ += sent;
  total_sent_ += sent;
  window_bytes_ += bytes_sent;
  total_bytes_ += bytes_sent;
  window_dense_bytes_ += dense_bytes;
  total_dense_bytes_ += dense_bytes;
  last_density_ = density;
  last_steady_ = steady;
  if (steady) {
    ++sparse_steps_;
    sparse_elements_ += elements;
    sparse_sent_ += sent;
    sparse_bytes_ += bytes_sent;
    sparse_dense_bytes_ += dense_bytes;
  }
  if (csv_) {
    for (const BlobSelection& b : blobs_) {
      *csv_ << current_iter_ << ',' << b.name << ',' << b.elements << ',' << b.sent << ','
            << b.threshold << ',' << b.vmr << ',' << b.leader << ',' << b.index_bytes << ','
            << density << ',' << b.max_age << ',' << b.mean_age << '\n';
    }
    *csv_ << current_iter_ << ",__step__," << elements << ',' << sent << ",0,0,-1," << bytes_sent
          << ',' << density << ",0,0\n";
    csv_->flush();
  }
}

void ExchangeStats::AddSideBytes(int64_t bytes) {
  window_bytes_ += bytes;
  total_bytes_ += bytes;
  if (last_steady_) sparse_bytes_ += bytes;
  if (csv_) {
    *csv_ << current_iter_ << ",__statistics__,0,0,0,0,-1," << bytes << ',' << last_density_
          << ",0,0\n";
    csv_->flush();
  }
}

void ExchangeStats::ResetWindow() {
  for (int p = 0; p < kNumPhases; ++p) {
    total_seconds_[p] += window_seconds_[p];
    window_seconds_[p] = 0;
  }
  window_steps_ = window_elements_ = window_sent_ = window_bytes_ = 0;
  window_capped_ = 0;
  window_zero_arrivals_ = 0;
  window_dense_bytes_ = 0;
}

void ExchangeStats::OpenCsv(const std::string& path) {
  csv_ = std::make_unique<std::ofstream>(path);
  CAFFE_REQUIRE(csv_->good()) << "-sync_stats " << path << ": cannot create file";
  // bytes: index bytes for a blob row, everything this rank sent for the __step__ row.
  // age_max, age_mean: steps since a coordinate of the blob was last sent, after the
  // step (0 for blobs sent whole).
  *csv_ << "iteration,blob,elements,sent,threshold,vmr,leader,bytes,density,age_max,age_mean\n";
}

}  // namespace caffe
