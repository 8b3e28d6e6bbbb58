// Top-k classification accuracy: bottom[0] holds scores with classes along
// accuracy_param.axis, bottom[1] the true class per position (as floats). A position
// counts as correct when fewer than top_k classes score strictly higher than the
// true class (so ties go in the prediction's favour). An optional second top gives
// the accuracy per class. Evaluation only: no gradient.
#ifndef CAFFE_LAYERS_ACCURACY_LAYER_HPP_
#define CAFFE_LAYERS_ACCURACY_LAYER_HPP_

#include "caffe/layer.hpp"

namespace caffe {

class AccuracyLayer : public Layer {
 public:
  explicit AccuracyLayer(const LayerParameter& param) : Layer(param) {}
  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Accuracy"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

  int64_t top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int64_t outer_ = 0;
  int64_t classes_ = 0;
  int64_t inner_ = 0;
  vector<int64_t> class_counts_;  // per class: labelled positions seen in Forward
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_ACCURACY_LAYER_HPP_
