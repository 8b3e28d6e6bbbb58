#include "caffe/sync/capture_probe.hpp"

#include <algorithm>
#include <functional>

#include <glog/logging.h>

namespace caffe {

CaptureShares MeasureCapture(const std::vector<float>& summed, const std::vector<uint8_t>& sent,
                             const std::vector<float>* scale) {
  CHECK_EQ(summed.size(), sent.size());
  if (scale) CHECK_EQ(summed.size(), scale->size());
  CaptureShares out;
  std::vector<double> squares(summed.size());
  double total = 0, chosen = 0;
  size_t count = 0;
  for (size_t i = 0; i < summed.size(); ++i) {
    const double x = scale ? double(summed[i]) / (*scale)[i] : double(summed[i]);
    squares[i] = x * x;
    total += squares[i];
    if (sent[i]) {
      chosen += squares[i];
      ++count;
    }
  }
  if (!(total > 0)) return out;
  double best = 0;
  if (count > 0) {
    std::nth_element(squares.begin(), squares.begin() + (count - 1), squares.end(),
                     std::greater<double>());
    for (size_t i = 0; i < count; ++i) best += squares[i];
  }
  out.chosen = chosen / total;
  out.best = best / total;
  return out;
}

}  // namespace caffe
