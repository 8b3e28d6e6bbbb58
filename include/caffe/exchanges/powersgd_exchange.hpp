// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019) on ResidualExchange's error
// feedback. Each weight blob is viewed as a matrix M of n rows (its first axis, the
// outputs) by m columns (the rest); M is this rank's residual v with the new gradient
// in it. With the last step's Q (m x r), one power iteration per step:
//   P = M Q, all-reduced (summed) over the ranks; P orthonormalized (same on all);
//   Q = M^T P, all-reduced; the applied gradient is P Q^T / N on every rank,
//   and v = M - P Q^T / N keeps what the approximation missed (error feedback),
// so N x (applied) + (sum of residuals) = (sum of local gradients), as for every
// residual method. Q is kept for the next step (warm start, its columns scaled to
// unit norm); the first comes from the shared seed. A blob with r (n + m) >= n m
// gains nothing from the factors and travels dense, all such blobs in one buffer.
// Both all-reduces are rings of fixed size: the traffic per rank does not grow with
// N. The state stays on the host. With value_encoding FP16 both factors travel in
// half precision and the invariant still holds to float accuracy: every rank applies
// the same rounded sums and takes off its residual what it applied (the dense buffer
// keeps its roundings as the sparse methods do).
#ifndef CAFFE_EXCHANGES_POWERSGD_EXCHANGE_HPP_
#define CAFFE_EXCHANGES_POWERSGD_EXCHANGE_HPP_

#include <string>
#include <vector>

#include "caffe/exchanges/residual_exchange.hpp"

namespace caffe {

class PowerSgdExchange : public ResidualExchange {
 public:
  // momentum_correction and max_relative_step act on single coordinates, which a
  // low-rank exchange does not send: they are ignored (with a notice), so one solver
  // file serves every method. The solver's momentum runs on the applied gradient, as
  // in the paper.
  PowerSgdExchange(const SyncParameter& param, Transport transport);
  const char* method_name() const override { return "POWERSGD"; }

  // The matrix view of a blob: rows = its first axis, cols = the rest.
  static void MatrixShape(const Blob& blob, int64_t* rows, int64_t* cols);
  // Whether rank-r factors of a rows x cols matrix are smaller than the matrix.
  static bool Compressible(int64_t rows, int64_t cols, int rank);
  // Orthonormalizes the columns of a row-major rows x cols matrix in place, left to
  // right (Gram-Schmidt in double, each column projected twice, which keeps it
  // orthogonal to working precision even when the columns are nearly parallel). A
  // column that lies in the span of those before it, to within 1e-6 of its own norm
  // or 1e-30 absolutely, becomes 0. Returns how many columns were kept.
  static int Orthonormalize(float* matrix, int64_t rows, int64_t cols);
  // Q of blob b (cols x r, row-major; empty for blobs sent dense), for tests.
  const vector<float>& q(size_t b) const { return q_[b]; }

 protected:
  // Blobs travel dense where the factors would not be smaller; logs the plan.
  void PlanBudget(const vector<Blob*>& params) override;
  int64_t ExchangeSparse(int iter, const vector<Blob*>& params, float density) override;
  // Nothing waits coordinate by coordinate: there are no ages.
  bool TracksAges() const override { return false; }
  std::string SaveMethodState() const override;
  void RestoreMethodState(const std::string& state) override;

 private:
  // The rank used for blob b: powersgd_param.rank, at most min(rows, cols).
  int RankFor(size_t b) const;
  // Column j of Q for blob b drawn from the shared seed (a fresh start or a column
  // that died out), the same on every rank.
  void DrawColumn(size_t b, int64_t cols, int rank, int j);

  vector<int64_t> rows_, cols_;
  vector<vector<float>> q_;
  // One step's fused P and Q of all compressed blobs, and what FP16's roundings took
  // off them (the all-reduce's scratch: the applied factors already account for it).
  vector<float> p_all_, q_all_, factor_rounding_;
};

}  // namespace caffe

#endif  // CAFFE_EXCHANGES_POWERSGD_EXCHANGE_HPP_
