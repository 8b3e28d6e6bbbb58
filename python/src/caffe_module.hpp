// The definitions of the `_caffe` extension module. One function fills the module so
// that the same code serves the shared library Python imports (extension_module.cpp)
// and the copy compiled into C++ programs that run Python layers (embedded_module.cpp).
#ifndef CAFFE_PYTHON_CAFFE_MODULE_HPP_
#define CAFFE_PYTHON_CAFFE_MODULE_HPP_

#include <pybind11/pybind11.h>

namespace caffe {

void DefineCaffeModule(pybind11::module_& m);

}  // namespace caffe

#endif  // CAFFE_PYTHON_CAFFE_MODULE_HPP_
