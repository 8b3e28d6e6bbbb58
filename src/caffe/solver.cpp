#include "caffe/solver.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "caffe/sync/comm_deadline.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/peak_memory.hpp"
#include "caffe/util/upgrade_proto.hpp"

namespace caffe {

// ------------------------------------------------------------------ registry

std::map<string, SolverRegistry::Creator>& SolverRegistry::Registry() {
  static std::map<string, Creator> registry;
  return registry;
}

void SolverRegistry::AddCreator(const string& type, Creator creator) {
  CHECK_EQ(Registry().count(type), 0u) << "solver type " << type << " registered twice";
  Registry()[type] = std::move(creator);
}

vector<string> SolverRegistry::SolverTypeList() {
  vector<string> types;
  for (const auto& entry : Registry()) types.push_back(entry.first);
  return types;
}

shared_ptr<Solver> SolverRegistry::CreateSolver(const SolverParameter& param,
                                                shared_ptr<Context> context,
                                                const string& source) {
  SolverParameter upgraded = param;
  UpgradeSolverAsNeeded(source, &upgraded);
  auto it = Registry().find(upgraded.type());
  if (it == Registry().end()) {
    std::ostringstream known;
    for (const auto& entry : Registry()) known << (known.tellp() > 0 ? ", " : "") << entry.first;
    ErrorBuilder() << (source.empty() ? "solver" : source) << ": unknown solver type '"
                   << upgraded.type() << "' (known: " << known.str() << ")";
  }
  return it->second(upgraded, std::move(context), source);
}

// ------------------------------------------------------------------ validation

void ValidateSolverParameter(const SolverParameter& param, const string& source) {
  const string where = source.empty() ? "solver" : source;
  CAFFE_REQUIRE(param.max_iter() > 0)
      << where << ": max_iter must be positive, found " << param.max_iter();
  CAFFE_REQUIRE(param.base_lr() >= 0)
      << where << ": base_lr must not be negative, found " << param.base_lr();
  CAFFE_REQUIRE(param.iter_size() > 0)
      << where << ": iter_size must be positive, found " << param.iter_size();
  CAFFE_REQUIRE(param.average_loss() > 0)
      << where << ": average_loss must be positive, found " << param.average_loss();
  CAFFE_REQUIRE(param.warmup_iter() >= 0)
      << where << ": warmup_iter must not be negative, found " << param.warmup_iter();
  CAFFE_REQUIRE(param.regularization_type() == "L1" || param.regularization_type() == "L2")
      << where << ": regularization_type must be \"L1\" or \"L2\", found \""
      << param.regularization_type() << "\"";
  const string& policy = param.lr_policy();
  if (policy == "step") {
    CAFFE_REQUIRE(param.stepsize() > 0) << where << ": lr_policy \"step\" needs stepsize > 0";
  } else if (policy == "multistep") {
    for (int i = 1; i < param.stepvalue_size(); ++i) {
      CAFFE_REQUIRE(param.stepvalue(i) > param.stepvalue(i - 1))
          << where << ": stepvalue must increase, found " << param.stepvalue(i - 1) << " then "
          << param.stepvalue(i);
    }
  } else if (policy == "poly") {
    CAFFE_REQUIRE(param.max_iter() > 0) << where << ": lr_policy \"poly\" needs max_iter";
  } else if (policy != "fixed" && policy != "exp" && policy != "inv" && policy != "sigmoid") {
    ErrorBuilder() << where << ": unknown lr_policy \"" << policy
                   << "\" (known: fixed, step, exp, inv, multistep, poly, sigmoid)";
  }
  CAFFE_REQUIRE(param.test_interval() >= 0)
      << where << ": test_interval must not be negative";
  for (int n : param.test_iter()) {
    CAFFE_REQUIRE(n > 0) << where << ": test_iter must be positive, found " << n;
  }
  CAFFE_REQUIRE(param.snapshot() >= 0) << where << ": snapshot must not be negative";
  CAFFE_REQUIRE(param.snapshot() == 0 || param.has_snapshot_prefix())
      << where << ": snapshot is set but snapshot_prefix is not";
}

// ------------------------------------------------------------------ construction

Solver::Solver(const SolverParameter& param, shared_ptr<Context> context, const string& source)
    : param_(param), source_(source.empty() ? "solver" : source), context_(std::move(context)) {
  CHECK(context_);
  UpgradeSolverAsNeeded(source_, &param_);
  ValidateSolverParameter(param_, source_);
  if (param_.random_seed() >= 0) {
    // Each rank draws its own data order and dropout masks; rank 0 keeps the seed.
    context_->Seed(static_cast<uint64_t>(param_.random_seed()) + 1000003ull * context_->rank());
  } else {
    context_->Seed(std::random_device{}() + 1000003ull * context_->rank());
  }
  InitTrainNet();
  if (is_root()) InitTestNets();
}

void Solver::InitTrainNet() {
  const int sources = param_.has_train_net_param() + param_.has_train_net() +
                      param_.has_net_param() + param_.has_net();
  CAFFE_REQUIRE(sources >= 1)
      << source_ << ": no net given (set `net` to a prototxt, or net_param inline)";
  CAFFE_REQUIRE(sources == 1)
      << source_ << ": give exactly one of net, net_param, train_net, train_net_param";
  NetParameter net_param;
  string net_source = source_;
  if (param_.has_train_net_param()) {
    net_param.CopyFrom(param_.train_net_param());
  } else if (param_.has_train_net()) {
    net_source = param_.train_net();
    ReadNetParamsFromTextFile(net_source, &net_param);
  } else if (param_.has_net_param()) {
    net_param.CopyFrom(param_.net_param());
  } else {
    net_source = param_.net();
    ReadNetParamsFromTextFile(net_source, &net_param);
  }
  // The solver's train_state overrides the file's, with the phase forced to TRAIN.
  NetState state;
  state.set_phase(TRAIN);
  state.MergeFrom(net_param.state());
  state.MergeFrom(param_.train_state());
  state.set_phase(TRAIN);
  *net_param.mutable_state() = state;
  net_ = std::make_shared<Net>(net_param, context_, net_source);
}

void Solver::InitTestNets() {
  const bool generic = param_.has_net() || param_.has_net_param();
  const int explicit_nets = param_.test_net_param_size() + param_.test_net_size();
  int generic_nets = 0;
  if (generic) generic_nets = std::max(0, param_.test_iter_size() - explicit_nets);
  const int total = explicit_nets + generic_nets;
  CAFFE_REQUIRE(param_.test_iter_size() == total)
      << source_ << ": test_iter is given " << param_.test_iter_size()
      << " time(s) but there are " << total << " test net(s)";
  CAFFE_REQUIRE(param_.test_state_size() == 0 || param_.test_state_size() == total)
      << source_ << ": test_state must be given once per test net (" << total << ")";
  if (total > 0) {
    CAFFE_REQUIRE(param_.test_interval() > 0 || !param_.has_test_interval())
        << source_ << ": test_interval must be positive when test nets exist";
  }
  for (int i = 0; i < total; ++i) {
    NetParameter net_param;
    string net_source = source_;
    if (i < param_.test_net_param_size()) {
      net_param.CopyFrom(param_.test_net_param(i));
    } else if (i < explicit_nets) {
      net_source = param_.test_net(i - param_.test_net_param_size());
      ReadNetParamsFromTextFile(net_source, &net_param);
    } else if (param_.has_net_param()) {
      net_param.CopyFrom(param_.net_param());
    } else {
      net_source = param_.net();
      ReadNetParamsFromTextFile(net_source, &net_param);
    }
    NetState state;
    state.set_phase(TEST);
    state.MergeFrom(net_param.state());
    if (param_.test_state_size() > 0) state.MergeFrom(param_.test_state(i));
    state.set_phase(TEST);
    *net_param.mutable_state() = state;
    test_nets_.push_back(std::make_shared<Net>(net_param, context_, net_source));
    test_nets_.back()->ShareTrainedLayersWith(*net_);
  }
}

Solver::~Solver() {
  if (net_) net_->set_backward_observer(nullptr);
}

void Solver::set_gradient_exchange(shared_ptr<GradientExchange> exchange) {
  exchange_ = std::move(exchange);
  initial_weights_shared_ = false;
  exchanged_params_.clear();
  statistic_params_.clear();
  if (!exchange_) return;
  // Only blobs that receive a gradient take part: the others' diffs are zero on
  // every rank, and sending them would only spend (or, in a sparse budget, steal)
  // bandwidth. Data statistics (BatchNorm's) are averaged at tests and snapshots.
  const vector<bool> receives = net_->learnable_param_receives_gradient();
  const vector<bool> statistic = net_->learnable_param_is_data_statistic();
  const vector<int> ready = net_->learnable_param_ready_layers();
  ExchangedBlobs blobs;
  for (size_t p = 0; p < receives.size(); ++p) {
    Blob* blob = net_->learnable_params()[p];
    if (statistic[p]) statistic_params_.push_back(blob);
    if (!receives[p]) continue;
    exchanged_params_.push_back(blob);
    blobs.names.push_back(net_->learnable_param_names()[p]);
    blobs.sizes.push_back(blob->count());
    blobs.lr_mults.push_back(net_->params_lr()[p]);
    blobs.ready_layers.push_back(ready[p]);
  }
  blobs.gpu = context_->mode() == Mode::GPU;
  exchange_->Describe(blobs);
  // Backward reports its progress so the exchange can start on finished gradients
  // (only in the last pass of iter_size, armed by BeginBackward).
  net_->set_backward_observer([this](int layer) {
    if (exchange_) exchange_->OnLayerBackward(layer);
  });
  if (exchange_->TakeOverMomentum(param_.momentum())) {
    // DGC momentum correction: the exchange accumulates momentum before selection,
    // so the solver must not apply it a second time.
    CAFFE_REQUIRE(param_.type() == "SGD")
        << source_ << ": sync_param.momentum_correction needs the SGD solver, found "
        << param_.type();
    momentum_in_exchange_ = true;
  }
}

// ------------------------------------------------------------------ learning rate

int Solver::MultistepIndex(int iter) const {
  int step = 0;
  while (step < param_.stepvalue_size() && iter >= param_.stepvalue(step)) ++step;
  return step;
}

float Solver::GetLearningRate() const { return GetLearningRateAt(iter_); }

float Solver::GetLearningRateAt(int iter) const {
  const string& policy = param_.lr_policy();
  const double base = param_.base_lr();
  const double t = iter;
  double rate = base;
  if (policy == "fixed") {
    rate = base;
  } else if (policy == "step") {
    rate = base * std::pow(param_.gamma(), std::floor(t / param_.stepsize()));
  } else if (policy == "exp") {
    rate = base * std::pow(param_.gamma(), t);
  } else if (policy == "inv") {
    rate = base * std::pow(1.0 + param_.gamma() * t, -param_.power());
  } else if (policy == "multistep") {
    rate = base * std::pow(param_.gamma(), MultistepIndex(iter));
  } else if (policy == "poly") {
    rate = base * std::pow(std::max(0.0, 1.0 - t / param_.max_iter()), param_.power());
  } else if (policy == "sigmoid") {
    rate = base / (1.0 + std::exp(-param_.gamma() * (t - param_.stepsize())));
  }
  // Linear warm-up: the first warmup_iter steps ramp from start_factor up to 1, so
  // large-batch (many-rank) runs do not diverge while statistics settle.
  if (param_.warmup_iter() > 0 && iter < param_.warmup_iter()) {
    const double start = param_.warmup_start_factor();
    rate *= start + (1.0 - start) * (t + 1) / param_.warmup_iter();
  }
  return static_cast<float>(rate);
}

// ------------------------------------------------------------------ the loop

SolverAction Solver::RequestedAction() {
  SolverAction action = action_function_ ? action_function_() : SolverAction::NONE;
  // All ranks must act on the same iteration, or the collectives would hang.
  if (exchange_ && exchange_->world_size() > 1) {
    // Only this rank saw the signal: say which one, since the others merely follow.
    LOG_IF(WARNING, action != SolverAction::NONE)
        << "rank " << context_->rank() << " of " << exchange_->world_size() << " received a "
        << (action == SolverAction::STOP ? "stop" : "snapshot") << " request (signal) at iteration "
        << iter_ << "; every rank follows it";
    ScopedCommPurpose purpose("the stop/snapshot agreement");
    action = exchange_->AgreeOnAction(action);
  }
  return action;
}

void Solver::UpdateSmoothedLoss(float loss, int start_iter, int average_loss) {
  // Mean of the last average_loss losses, kept as a ring so it is O(1) per step.
  if (static_cast<int>(losses_.size()) < average_loss) {
    losses_.push_back(loss);
    const int size = static_cast<int>(losses_.size());
    smoothed_loss_ = (smoothed_loss_ * (size - 1) + loss) / size;
  } else {
    const int idx = (iter_ - start_iter) % average_loss;
    smoothed_loss_ += (loss - losses_[idx]) / average_loss;
    losses_[idx] = loss;
  }
}

void Solver::DisplayProgress() {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - display_start_).count();
  const int done = iter_ - display_start_iter_;
  const double rate = (seconds > 0 && done > 0) ? done / seconds : 0;
  std::ostringstream eta;
  if (rate > 0) {
    const long remaining = static_cast<long>((param_.max_iter() - iter_) / rate);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", remaining / 3600, (remaining / 60) % 60,
                  remaining % 60);
    eta << " (" << std::fixed;
    eta.precision(2);
    eta << rate << " iter/s, ETA " << buf << ")";
  }
  LOG(INFO) << "Iteration " << iter_ << eta.str() << ", loss = " << smoothed_loss_;
  const vector<Blob*>& outputs = net_->output_blobs();
  int score_index = 0;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const float* data = outputs[j]->cpu_data();
    const string& name = net_->blob_names()[net_->output_blob_indices()[j]];
    const float weight = net_->blob_loss_weights()[net_->output_blob_indices()[j]];
    for (int64_t k = 0; k < outputs[j]->count(); ++k) {
      std::ostringstream loss_msg;
      if (weight) loss_msg << " (* " << weight << " = " << weight * data[k] << " loss)";
      LOG(INFO) << "    Train net output #" << score_index++ << ": " << name << " = " << data[k]
                << loss_msg.str();
    }
  }
  LOG(INFO) << "Iteration " << iter_ << ", lr = " << GetLearningRate();
  const HostDeviceTransfers transfers = SyncedMemoryTransfers();
  if (context_->mode() == Mode::GPU && done > 0) {
    LOG(INFO) << "Iteration " << iter_ << ", PCIe per step: host to device "
              << (transfers.to_device - display_start_transfers_.to_device) / done
              << " bytes, device to host "
              << (transfers.to_host - display_start_transfers_.to_host) / done << " bytes";
    LOG(INFO) << "Iteration " << iter_ << ", device memory in use: " << std::fixed
              << std::setprecision(0) << DeviceMemoryInUseMegabytes() << " MB";
  }
  display_start_transfers_ = transfers;
  if (exchange_) {
    const string summary = exchange_->Summary();
    if (!summary.empty()) LOG(INFO) << "Iteration " << iter_ << ", sync: " << summary;
    exchange_->ResetWindow();
  }
  display_start_ = now;
  display_start_iter_ = iter_;
}

void Solver::ReportNonFiniteLoss(float loss) const {
  // Name the first layer whose output went non-finite: that is where to look.
  string culprit;
  for (size_t i = 0; i < net_->layers().size() && culprit.empty(); ++i) {
    for (const Blob* top : net_->top_vecs()[i]) {
      const float* data = top->cpu_data();
      bool finite = true;
      for (int64_t k = 0; k < top->count() && finite; ++k) finite = std::isfinite(data[k]);
      if (!finite) {
        culprit = "layer '" + net_->layer_names()[i] + "' (" + net_->layers()[i]->type() + ")";
        break;
      }
    }
  }
  ErrorBuilder() << source_ << ": iteration " << iter_ << ": the loss is " << loss
                 << "; first non-finite output: " << (culprit.empty() ? "none found" : culprit)
                 << " (lower base_lr, or set clip_gradients)";
}

void Solver::Step(int iters) {
  const int start_iter = iter_;
  const int stop_iter = iter_ + iters;
  const int average_loss = param_.average_loss();
  losses_.clear();
  smoothed_loss_ = 0;
  display_start_ = std::chrono::steady_clock::now();
  display_start_iter_ = iter_;
  display_start_transfers_ = SyncedMemoryTransfers();
  if (exchange_ && !initial_weights_shared_) {
    ScopedCommPurpose purpose("the initial weights");
    exchange_->BroadcastInitialWeights(net_->learnable_params());
    initial_weights_shared_ = true;
  }

  auto since = std::chrono::steady_clock::now();
  auto add_training_time = [&]() {
    const auto now = std::chrono::steady_clock::now();
    training_seconds_ += std::chrono::duration<double>(now - since).count();
    since = now;
  };
  if (exchange_) SetCommPurpose(std::string("the gradient exchange (") + exchange_->method_name() + ")");
  while (iter_ < stop_iter) {
    SetCommIteration(iter_);
    net_->ClearParamDiffs();
    if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
        (iter_ > 0 || param_.test_initialization())) {
      add_training_time();
      LogTrainingTime();
      AverageDataStatistics();
      // True when the test pass ends training: its score reached -stop_at_test_score,
      // or a stop request came during it (TestAll asks the action function too).
      auto test = [this] {
        TestAll();
        if (ReachedStopScore()) requested_early_exit_ = true;
        return requested_early_exit_;
      };
      if (exchange_ && exchange_->world_size() > 1) {
        // The others wait for rank 0's test pass however long it takes (a whole
        // ImageNet validation set) while rank 0 says it is alive, rather than in the
        // step's first collective, whose deadline would take a long test pass for a
        // lost rank. And they learn whether a stop request interrupted it, so that
        // every rank leaves the loop at the same iteration.
        ScopedCommPurpose purpose("rank 0's test pass");
        requested_early_exit_ =
            exchange_->comm().AnyTrueAfterRootWork(requested_early_exit_, test);
      } else if (is_root()) {
        test();
      }
      since = std::chrono::steady_clock::now();  // the test pass is not training time
      if (requested_early_exit_) break;
    }
    const bool display = param_.display() && iter_ % param_.display() == 0;
    float loss = 0;
    for (int i = 0; i < param_.iter_size(); ++i) {
      if (exchange_ && i == param_.iter_size() - 1) {
        exchange_->BeginBackward(iter_, exchanged_params_);
      }
      loss += net_->ForwardBackward();
    }
    loss /= param_.iter_size();
    if (!std::isfinite(loss)) ReportNonFiniteLoss(loss);
    UpdateSmoothedLoss(loss, start_iter, average_loss);

    // The gradient exchange point: after backward, before the update.
    if (exchange_) {
      // An exchange that applies momentum itself must see the decay inside the
      // gradient it accumulates, or decay loses the 1 / (1 - momentum) gain it has in
      // the dense solver (DGC adds it before momentum correction too).
      if (momentum_in_exchange_) RegularizeBeforeExchange();
      if (exchange_->wants_learning_rate()) exchange_->set_learning_rate(GetLearningRate());
      exchange_->Exchange(iter_, exchanged_params_);
    }
    ApplyUpdate();
    if (display && is_root()) DisplayProgress();
    ++iter_;

    const SolverAction action = RequestedAction();
    if ((param_.snapshot() && iter_ % param_.snapshot() == 0) ||
        action == SolverAction::SNAPSHOT) {
      Snapshot();
    }
    if (action == SolverAction::STOP) {
      requested_early_exit_ = true;
      break;
    }
  }
  add_training_time();
}

void Solver::ApplyUpdateFromDiffs() {
  // Under momentum correction ApplyUpdate leaves momentum and decay to the exchange
  // (RegularizeBeforeExchange, TakeOverMomentum), which this call skips: the step
  // would silently be plain SGD without decay.
  CAFFE_REQUIRE(!momentum_in_exchange_)
      << source_ << ": apply_update cannot run with sync_param.momentum_correction: "
      << "there the gradient exchange applies momentum and weight decay, and apply_update "
      << "skips the exchange";
  ApplyUpdate();
}

void Solver::LogTrainingTime() const {
  // Before each test pass: what a time-to-accuracy curve plots against its scores.
  LOG_IF(INFO, is_root()) << "Iteration " << iter_ << ", training time " << std::fixed
                          << std::setprecision(2) << training_seconds_ << " s (test passes excluded)";
}

bool Solver::ReachedStopScore() const {
  if (stop_output_.empty()) return false;
  const auto score = last_test_scores_.find("0/" + stop_output_);
  CAFFE_REQUIRE(score != last_test_scores_.end())
      << source_ << ": the test net has no output '" << stop_output_
      << "' to stop at (-stop_at_test_score)";
  if (!(score->second >= stop_value_)) return false;
  LOG(INFO) << "Iteration " << iter_ << ", test output " << stop_output_ << " = " << score->second
            << " reached " << stop_value_ << " after " << std::fixed << std::setprecision(2)
            << training_seconds_ << " s of training";
  return true;
}

void Solver::Solve(const string& resume_file) {
  LOG_IF(INFO, is_root()) << "Solving " << net_->name();
  LOG_IF(INFO, is_root()) << "Learning Rate Policy: " << param_.lr_policy();
  requested_early_exit_ = false;
  if (!resume_file.empty()) {
    LOG_IF(INFO, is_root()) << "Restoring previous solver status from " << resume_file;
    Restore(resume_file);
  }
  Step(param_.max_iter() - iter_);
  if (param_.snapshot_after_train() && (!param_.snapshot() || iter_ % param_.snapshot() != 0)) {
    Snapshot();
  }
  if (requested_early_exit_) {
    LOG_IF(INFO, is_root()) << "Optimization stopped early.";
    return;
  }
  // One last forward pass for the final training loss, as Caffe does.
  if (param_.display() && iter_ % param_.display() == 0 && is_root()) {
    float loss;
    net_->Forward(&loss);
    LOG(INFO) << "Iteration " << iter_ << ", loss = " << loss;
  }
  if (param_.test_interval() && iter_ % param_.test_interval() == 0) {
    LogTrainingTime();
    AverageDataStatistics();
    if (is_root()) {
      TestAll();
      ReachedStopScore();  // says so when the last test is the one that reaches it
    }
  }
  LOG_IF(INFO, is_root()) << "Optimization Done.";
}

void Solver::AverageDataStatistics() {
  // Collective: every rank reaches the same tests and snapshots.
  if (exchange_ && exchange_->world_size() > 1 && !statistic_params_.empty()) {
    ScopedCommPurpose purpose("the data statistics' average");
    exchange_->AverageOverRanks(statistic_params_);
  }
}

void Solver::TestAll() {
  last_test_scores_.clear();
  last_test_iter_ = iter_;
  for (size_t i = 0; i < test_nets_.size() && !requested_early_exit_; ++i) {
    Test(static_cast<int>(i));
  }
}

void Solver::Test(int test_net_id) {
  LOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << test_net_id << ")";
  Net& net = *test_nets_[test_net_id];
  vector<double> scores;
  double loss = 0;
  for (int i = 0; i < param_.test_iter(test_net_id); ++i) {
    const SolverAction action = action_function_ ? action_function_() : SolverAction::NONE;
    if (action == SolverAction::STOP) {
      requested_early_exit_ = true;
      LOG(INFO) << "Test interrupted.";
      return;
    }
    float iter_loss;
    const vector<Blob*>& result = net.Forward(&iter_loss);
    if (param_.test_compute_loss()) loss += iter_loss;
    size_t idx = 0;
    for (Blob* blob : result) {
      for (int64_t k = 0; k < blob->count(); ++k, ++idx) {
        if (scores.size() <= idx) scores.push_back(0);
        scores[idx] += blob->cpu_data()[k];
      }
    }
  }
  if (param_.test_compute_loss()) {
    LOG(INFO) << "Test loss: " << loss / param_.test_iter(test_net_id);
  }
  size_t idx = 0;
  for (size_t j = 0; j < net.output_blobs().size(); ++j) {
    const Blob* blob = net.output_blobs()[j];
    const string& name = net.blob_names()[net.output_blob_indices()[j]];
    const float weight = net.blob_loss_weights()[net.output_blob_indices()[j]];
    for (int64_t k = 0; k < blob->count(); ++k, ++idx) {
      const double mean = scores[idx] / param_.test_iter(test_net_id);
      std::ostringstream loss_msg;
      if (weight) loss_msg << " (* " << weight << " = " << weight * mean << " loss)";
      LOG(INFO) << "    Test net output #" << idx << ": " << name << " = " << mean
                << loss_msg.str();
      last_test_scores_[std::to_string(test_net_id) + "/" + name +
                        (blob->count() > 1 ? "[" + std::to_string(k) + "]" : "")] =
          static_cast<float>(mean);
    }
  }
}

// ------------------------------------------------------------------ snapshots

string Solver::RankStateFilename(const string& state_file, int rank) {
  const size_t dot = state_file.rfind(".solverstate");
  return (dot == string::npos ? state_file : state_file.substr(0, dot)) + ".rank" +
         std::to_string(rank) + ".solverstate";
}

string Solver::SnapshotFilename(const string& extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

namespace {
// Snapshot prefixes name a folder that may not exist yet ("build/snapshots/x").
void CreateParentFolders(const string& path) {
  for (size_t pos = path.find('/', 1); pos != string::npos; pos = path.find('/', pos + 1)) {
    const string folder = path.substr(0, pos);
    if (!FileExists(folder)) ::mkdir(folder.c_str(), 0755);
  }
}
}  // namespace

string Solver::Snapshot() {
  // The saved model then stands for every rank's data, and every rank holds it.
  AverageDataStatistics();
  CreateParentFolders(param_.snapshot_prefix());
  // snapshot_format picks the weights' format, with BVLC's names. The state is this
  // project's binary .solverstate either way (not BVLC's .solverstate.h5): it names
  // the weights file, and Restore loads that by its ending.
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  const string model_file = SnapshotFilename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  const string state_file = SnapshotFilename(".solverstate");
  // Every rank's own random stream and exchange state (IWP residuals) sit beside
  // the solverstate, so that resume is exact on all ranks.
  if (exchange_) {
    SolverState mine;
    mine.set_iter(iter_);
    mine.set_rank(context_->rank());
    mine.set_world_size(exchange_->world_size());
    mine.set_rng_state(context_->SerializeRng());
    mine.set_sync_state(exchange_->SaveState());
    WriteProtoToBinaryFile(mine, RankStateFilename(state_file, context_->rank()));
  }
  if (!is_root()) return model_file;
  if (hdf5) {
    LOG(INFO) << "Snapshotting to HDF5 file " << model_file;
    net_->ToHDF5(model_file, param_.snapshot_diff());
  } else {
    NetParameter net_param;
    net_->ToProto(&net_param, param_.snapshot_diff());
    LOG(INFO) << "Snapshotting to binary proto file " << model_file;
    WriteProtoToBinaryFile(net_param, model_file);
  }

  SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model_file);
  state.set_current_step(MultistepIndex(iter_));
  state.set_rng_state(context_->SerializeRng());
  SnapshotSolverState(&state);
  LOG(INFO) << "Snapshotting solver state to binary proto file " << state_file;
  WriteProtoToBinaryFile(state, state_file);
  return model_file;
}

void Solver::Restore(const string& state_file) {
  const string h5 = ".h5";
  const bool bvlc_hdf5_state =
      state_file.size() >= h5.size() &&
      state_file.compare(state_file.size() - h5.size(), h5.size(), h5) == 0;
  CAFFE_REQUIRE(!bvlc_hdf5_state)
      << state_file << ": BVLC Caffe's HDF5 solver state cannot be resumed here; snapshots "
      << "in either snapshot_format write a binary .solverstate, resume from that";
  SolverState state;
  ReadProtoFromBinaryFile(state_file, &state);
  CAFFE_REQUIRE(state.has_iter())
      << state_file << ": not a solver state (no iteration recorded)";
  if (state.has_learned_net()) {
    string model = state.learned_net();
    // A snapshot folder may have moved; look beside the state file as well.
    if (!FileExists(model)) {
      const size_t slash = state_file.find_last_of('/');
      const size_t mslash = model.find_last_of('/');
      const string beside = (slash == string::npos ? string() : state_file.substr(0, slash + 1)) +
                            (mslash == string::npos ? model : model.substr(mslash + 1));
      if (FileExists(beside)) model = beside;
    }
    try {
      net_->CopyTrainedLayersFrom(model);
    } catch (const Error& e) {
      // Usually a snapshot of another net: name the state the user gave, not only
      // the weights file it points to.
      ErrorBuilder() << state_file << ": restoring its weights: " << e.what();
    }
  }
  try {
    RestoreSolverState(state);
  } catch (const Error& e) {
    ErrorBuilder() << state_file << ": " << e.what();
  }
  iter_ = state.iter();
  if (state.has_rng_state()) context_->DeserializeRng(state.rng_state());
  if (exchange_) {
    const string rank_file = RankStateFilename(state_file, context_->rank());
    SolverState mine;
    ReadProtoFromBinaryFile(rank_file, &mine);
    CAFFE_REQUIRE(mine.iter() == state.iter() && mine.world_size() == exchange_->world_size())
        << rank_file << ": written at iteration " << mine.iter() << " by " << mine.world_size()
        << " rank(s); resuming iteration " << state.iter() << " on " << exchange_->world_size();
    if (mine.has_rng_state()) context_->DeserializeRng(mine.rng_state());
    try {
      exchange_->RestoreState(mine.sync_state());
    } catch (const Error& e) {
      ErrorBuilder() << rank_file << ": " << e.what();
    }
  }
}

}  // namespace caffe
