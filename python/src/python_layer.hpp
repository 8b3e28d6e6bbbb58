// The `Python` layer type: a layer whose setup, reshape, forward and backward are
// methods of a Python class (python_param { module layer param_str }), BVLC's way
// for users to extend a net without C++. Works inside a Python program (pycaffe) and
// inside `caffe train`, which starts an embedded interpreter on first use.
#ifndef CAFFE_PYTHON_PYTHON_LAYER_HPP_
#define CAFFE_PYTHON_PYTHON_LAYER_HPP_

#include <pybind11/pybind11.h>

#include "caffe/layer.hpp"

namespace caffe {

// Hidden like pybind11's own types, which it holds; only this binary uses it.
class __attribute__((visibility("hidden"))) PythonLayer : public Layer {
 public:
  // Imports the module and makes an instance of the class (errors name the layer).
  explicit PythonLayer(const LayerParameter& param);
  ~PythonLayer() override;

  void LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "Python"; }

  // The user's object, which pycaffe returns for this layer in Net.layers.
  const pybind11::object& python_object() const { return self_; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;

 private:
  // Calls self.<method>(args...), turning a Python exception into a caffe::Error
  // that names this layer and the exception.
  template <typename... Args>
  void Call(const char* method, Args&&... args);

  pybind11::object self_;
};

}  // namespace caffe

#endif  // CAFFE_PYTHON_PYTHON_LAYER_HPP_
