#include "python_layer.hpp"

#include <utility>

#include "blob_vec.hpp"
#include "caffe/layer_factory.hpp"
#include "python_runtime.hpp"

namespace py = pybind11;

namespace caffe {

namespace {

py::list BlobList(const vector<Blob*>& blobs) {
  py::list list;
  for (Blob* blob : blobs) list.append(py::cast(blob, py::return_value_policy::reference));
  return list;
}

}  // namespace

PythonLayer::PythonLayer(const LayerParameter& param) : Layer(param) {
  const PythonParameter& p = param.python_param();
  LAYER_REQUIRE(!p.module().empty() && !p.layer().empty())
      << "python_param needs a module and a layer (the class), found module '" << p.module()
      << "' layer '" << p.layer() << "'";
  EnsurePythonRuntime();
  py::gil_scoped_acquire gil;
  py::object module;
  try {
    module = py::module_::import(p.module().c_str());
  } catch (const py::error_already_set& e) {
    Fail() << "cannot import module '" << p.module() << "' (" << DescribePythonError(e)
           << "); is its folder on PYTHONPATH?";
  }
  LAYER_REQUIRE(py::hasattr(module, p.layer().c_str()))
      << "module '" << p.module() << "' has no class '" << p.layer() << "'";
  try {
    self_ = module.attr(p.layer().c_str())();
    self_.attr("param_str") = p.param_str();
    self_.attr("phase") = static_cast<int>(phase_);
    // self.blobs is this layer's own parameter list, so that blobs the Python code
    // adds (self.blobs.add_blob) are learned, saved and loaded like any layer's.
    self_.attr("blobs") = py::cast(&blobs_, py::return_value_policy::reference);
  } catch (const py::error_already_set& e) {
    Fail() << "cannot create '" << p.module() << "." << p.layer()
           << "': " << DescribePythonError(e);
  }
}

PythonLayer::~PythonLayer() {
  if (!self_ || !Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  self_ = py::object();
}

template <typename... Args>
void PythonLayer::Call(const char* method, Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    self_.attr(method)(std::forward<Args>(args)...);
  } catch (const py::error_already_set& e) {
    Fail() << method << "() failed: " << DescribePythonError(e);
  }
}

void PythonLayer::LayerSetUp(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  py::gil_scoped_acquire gil;
  Call("setup", BlobList(bottom), BlobList(top));
  // Blobs setup added (self.blobs.add_blob) learn, as every layer's own blobs do.
  param_propagate_down_.resize(blobs_.size(), true);
}

void PythonLayer::Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  py::gil_scoped_acquire gil;
  Call("reshape", BlobList(bottom), BlobList(top));
}

void PythonLayer::Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  py::gil_scoped_acquire gil;
  Call("forward", BlobList(bottom), BlobList(top));
}

void PythonLayer::Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                               const vector<Blob*>& bottom) {
  py::gil_scoped_acquire gil;
  py::list down;
  for (bool d : propagate_down) down.append(d);
  Call("backward", BlobList(top), down, BlobList(bottom));
}

REGISTER_LAYER_CLASS(Python);

}  // namespace caffe
