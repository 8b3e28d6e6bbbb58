// What the Python layer needs from the process it runs in: an interpreter, the
// extension's types, and Python exceptions turned into caffe::Error.
#ifndef CAFFE_PYTHON_PYTHON_RUNTIME_HPP_
#define CAFFE_PYTHON_PYTHON_RUNTIME_HPP_

#include <string>

#include <pybind11/pybind11.h>

namespace caffe {

// Starts the interpreter when this is a C++ program (`caffe train`) that has not
// started one, and makes sure the extension's types (Blob, BlobVec) are registered:
// in a program the extension is compiled in (see embedded_module.cpp), in Python it
// was imported by `import caffe`. Call without holding the GIL or with it.
void EnsurePythonRuntime();

// "ValueError: bad shape (my_layer.py:12)": the exception being handled, in one line.
std::string DescribePythonError(const pybind11::error_already_set& error);

}  // namespace caffe

#endif  // CAFFE_PYTHON_PYTHON_RUNTIME_HPP_
