// The point between backward and update where ranks combine their gradients. The
// solver calls Exchange once per step with every learnable parameter; on entry the
// diffs hold this rank's local gradient (already averaged over iter_size), on return
// they hold the gradient every rank applies. Implementations see flat parameter and
// gradient buffers only, never layer types. With one rank the solver has none.
#ifndef CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_
#define CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_

#include <string>
#include <vector>

#include "caffe/blob.hpp"

namespace caffe {

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;

  // Called once before the first step: rank 0's initial weights go to every rank.
  virtual void BroadcastInitialWeights(const vector<Blob*>& params) = 0;
  virtual void Exchange(int iter, const vector<Blob*>& params) = 0;
  // True on every rank if any rank asks to stop (signals, errors), so all ranks stop
  // together on the same iteration.
  virtual bool AgreeToStop(bool local_request) = 0;
  // Per-rank state that resume must restore (residuals, momenta), as bytes.
  virtual std::string SaveState() const { return {}; }
  virtual void RestoreState(const std::string& state) {}
  // One line for the display interval (bytes, ratios, timings).
  virtual std::string Summary() const { return {}; }
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_GRADIENT_EXCHANGE_HPP_
