#include "caffe/solvers/sgd_solver.hpp"

#include <cmath>

#include "caffe/mode_math.hpp"

namespace caffe {

SGDSolver::SGDSolver(const SolverParameter& param, shared_ptr<Context> context,
                     const string& source)
    : Solver(param, std::move(context), source) {}

void SGDSolver::AllocateHistory() {
  // Allocated lazily: subclasses' HistorySetsPerParam is not virtual-callable from
  // the base constructor.
  if (!history_.empty()) return;
  const vector<Blob*>& params = net_->learnable_params();
  for (int k = 0; k < HistorySetsPerParam(); ++k) {
    for (Blob* p : params) history_.push_back(std::make_shared<Blob>(p->shape()));
  }
  for (Blob* p : params) temp_.push_back(std::make_shared<Blob>(p->shape()));
}

void SGDSolver::ApplyUpdate() {
  AllocateHistory();
  const float rate = GetLearningRate();
  ClipGradients();
  for (size_t i = 0; i < net_->learnable_params().size(); ++i) {
    const int id = static_cast<int>(i);
    if (!momentum_in_exchange_) {
      Normalize(id);
      Regularize(id);
    }
    ComputeUpdateValue(id, rate);
  }
  net_->Update();
}

void SGDSolver::RegularizeBeforeExchange() {
  for (size_t i = 0; i < net_->learnable_params().size(); ++i) {
    const int id = static_cast<int>(i);
    Normalize(id);
    Regularize(id);
  }
}

void SGDSolver::ClipGradients() {
  const float clip = param_.clip_gradients();
  if (clip < 0) return;
  const Mode mode = context_->mode();
  double sumsq = 0;
  for (Blob* p : net_->learnable_params()) {
    if (p->count() > 0) sumsq += math::dot(mode, p->count(), DiffOn(mode, *p), DiffOn(mode, *p));
  }
  const double norm = std::sqrt(sumsq);
  if (norm > clip) {
    const float factor = static_cast<float>(clip / norm);
    LOG_IF(INFO, context_->rank() == 0) << "Gradient clipping: scaling down gradients (L2 norm "
                                        << norm << " > " << clip << ") by scale factor " << factor;
    for (Blob* p : net_->learnable_params()) {
      if (p->count() > 0) math::scal(mode, p->count(), factor, MutableDiffOn(mode, p));
    }
  }
}

void SGDSolver::Normalize(int param_id) {
  if (param_.iter_size() == 1) return;
  Blob* p = net_->learnable_params()[param_id];
  if (p->count() == 0) return;
  const Mode mode = context_->mode();
  math::scal(mode, p->count(), 1.f / param_.iter_size(), MutableDiffOn(mode, p));
}

void SGDSolver::Regularize(int param_id) {
  Blob* p = net_->learnable_params()[param_id];
  const float decay = param_.weight_decay() * net_->params_weight_decay()[param_id];
  // A blob with lr_mult 0 is never moved, so its decay term would only enter the
  // global clip norm, where ranks would disagree about it (it is not exchanged).
  if (decay == 0 || p->count() == 0 || net_->params_lr()[param_id] == 0) return;
  const Mode mode = context_->mode();
  if (param_.regularization_type() == "L2") {
    math::axpy(mode, p->count(), decay, DataOn(mode, *p), MutableDiffOn(mode, p));
  } else {
    float* sign = MutableDataOn(mode, temp_[param_id].get());
    math::sign(mode, p->count(), DataOn(mode, *p), sign);
    math::axpy(mode, p->count(), decay, sign, MutableDiffOn(mode, p));
  }
}

void SGDSolver::ComputeUpdateValue(int param_id, float rate) {
  Blob* p = net_->learnable_params()[param_id];
  const float local_rate = rate * net_->params_lr()[param_id];
  if (p->count() == 0) return;
  const Mode mode = context_->mode();
  // v = momentum * v + lr * g; the step is v.
  float* v = MutableDataOn(mode, history_[param_id].get());
  const float momentum = momentum_in_exchange_ ? 0.f : param_.momentum();
  math::axpby(mode, p->count(), local_rate, DiffOn(mode, *p), momentum, v);
  math::copy(mode, p->count(), v, MutableDiffOn(mode, p));
}

void SGDSolver::SnapshotSolverState(SolverState* state) {
  AllocateHistory();
  state->clear_history();
  for (const auto& h : history_) h->ToProto(state->add_history());
}

void SGDSolver::RestoreSolverState(const SolverState& state) {
  AllocateHistory();
  CAFFE_REQUIRE(state.history_size() == static_cast<int>(history_.size()))
      << "the solver state holds " << state.history_size() << " history blob(s), this "
      << type() << " solver on this net needs " << history_.size()
      << " (snapshot of a different net or solver type?)";
  for (size_t i = 0; i < history_.size(); ++i) {
    try {
      history_[i]->FromProto(state.history(static_cast<int>(i)), false);
    } catch (const Error& e) {
      ErrorBuilder() << "history blob " << i << ": " << e.what()
                     << " (snapshot of a different net?)";
    }
  }
}

REGISTER_SOLVER_CLASS(SGD);

}  // namespace caffe
