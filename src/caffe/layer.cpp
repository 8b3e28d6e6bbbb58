#include "caffe/layer.hpp"

#include "caffe/util/math_functions.hpp"

namespace caffe {

Layer::Layer(const LayerParameter& param)
    : layer_param_(param), phase_(param.phase()), context_(std::make_shared<Context>()) {
  // Weights given inline in the layer parameter (deploy nets, tests) are loaded here.
  for (int i = 0; i < param.blobs_size(); ++i) {
    blobs_.push_back(std::make_shared<Blob>());
    try {
      blobs_.back()->FromProto(param.blobs(i));
    } catch (const Error& e) {
      Fail() << "inline blobs[" << i << "]: " << e.what();
    }
  }
}

ErrorBuilder Layer::Fail() const {
  return ErrorBuilder("layer '" + layer_param_.name() + "' (" + layer_param_.type() + "): ",
                      layer_param_.name());
}

string Layer::bottom_name(int i) const {
  return i < layer_param_.bottom_size() ? layer_param_.bottom(i) : "#" + std::to_string(i);
}

string Layer::top_name(int i) const {
  return i < layer_param_.top_size() ? layer_param_.top(i) : "#" + std::to_string(i);
}

void Layer::SetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  CheckBlobCounts(bottom, top);
  LayerSetUp(bottom, top);
  Reshape(bottom, top);
  SetLossWeights(top);
}

float Layer::Forward(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  Reshape(bottom, top);
  if (context_->mode() == Mode::GPU) {
    Forward_gpu(bottom, top);
  } else {
    Forward_cpu(bottom, top);
  }
  float loss = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    if (this->loss(static_cast<int>(i)) == 0) continue;
    const int64_t count = top[i]->count();
    loss += math::dot(count, top[i]->cpu_data(), top[i]->cpu_diff());
  }
  return loss;
}

void Layer::Backward(const vector<Blob*>& top, const vector<bool>& propagate_down,
                     const vector<Blob*>& bottom) {
  if (context_->mode() == Mode::GPU) {
    Backward_gpu(top, propagate_down, bottom);
  } else {
    Backward_cpu(top, propagate_down, bottom);
  }
}

void Layer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  static bool logged = false;
  if (!logged) {
    LOG(INFO) << type() << " has no GPU path; running it on the CPU";
    logged = true;
  }
  Forward_cpu(bottom, top);
}

void Layer::Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                         const vector<Blob*>& bottom) {
  Backward_cpu(top, propagate_down, bottom);
}

void Layer::ToProto(LayerParameter* param, bool write_diff) {
  param->Clear();
  param->CopyFrom(layer_param_);
  param->clear_blobs();
  for (const auto& blob : blobs_) blob->ToProto(param->add_blobs(), write_diff);
}

void Layer::set_loss(int top_index, float value) {
  if (loss_.size() <= static_cast<size_t>(top_index)) loss_.resize(top_index + 1, 0.f);
  loss_[top_index] = value;
}

void Layer::set_param_propagate_down(int param_id, bool value) {
  if (param_propagate_down_.size() <= static_cast<size_t>(param_id)) {
    param_propagate_down_.resize(param_id + 1, true);
  }
  param_propagate_down_[param_id] = value;
}

void Layer::CheckBlobCounts(const vector<Blob*>& bottom, const vector<Blob*>& top) const {
  const int nb = static_cast<int>(bottom.size());
  const int nt = static_cast<int>(top.size());
  if (ExactNumBottomBlobs() >= 0) {
    LAYER_REQUIRE(nb == ExactNumBottomBlobs())
        << "expected " << ExactNumBottomBlobs() << " bottom blob(s), found " << nb;
  }
  if (MinBottomBlobs() >= 0) {
    LAYER_REQUIRE(nb >= MinBottomBlobs())
        << "expected at least " << MinBottomBlobs() << " bottom blob(s), found " << nb;
  }
  if (MaxBottomBlobs() >= 0) {
    LAYER_REQUIRE(nb <= MaxBottomBlobs())
        << "expected at most " << MaxBottomBlobs() << " bottom blob(s), found " << nb;
  }
  if (ExactNumTopBlobs() >= 0) {
    LAYER_REQUIRE(nt == ExactNumTopBlobs())
        << "expected " << ExactNumTopBlobs() << " top blob(s), found " << nt;
  }
  if (MinTopBlobs() >= 0) {
    LAYER_REQUIRE(nt >= MinTopBlobs())
        << "expected at least " << MinTopBlobs() << " top blob(s), found " << nt;
  }
  if (MaxTopBlobs() >= 0) {
    LAYER_REQUIRE(nt <= MaxTopBlobs())
        << "expected at most " << MaxTopBlobs() << " top blob(s), found " << nt;
  }
  if (EqualNumBottomTopBlobs()) {
    LAYER_REQUIRE(nb == nt) << "expected as many tops as bottoms, found " << nb
                            << " bottom(s) and " << nt << " top(s)";
  }
}

void Layer::SetLossWeights(const vector<Blob*>& top) {
  const int num_weights = layer_param_.loss_weight_size();
  if (num_weights == 0) return;
  LAYER_REQUIRE(num_weights == static_cast<int>(top.size()))
      << "loss_weight must be given once per top (" << top.size() << "), found "
      << num_weights;
  for (int i = 0; i < num_weights; ++i) {
    const float weight = layer_param_.loss_weight(i);
    set_loss(i, weight);
    if (weight == 0) continue;
    // The top's diff holds d(total loss)/d(top) = weight; Forward dots it with data.
    math::set(top[i]->count(), weight, top[i]->mutable_cpu_diff());
  }
}

}  // namespace caffe
