// The same module compiled into C++ programs (the `caffe` tool), so that a Python
// layer's `import caffe` finds it there instead of loading the shared library, which
// would bring a second copy of the framework into the process.
#include <pybind11/embed.h>

#include "caffe_module.hpp"

PYBIND11_EMBEDDED_MODULE(_caffe, m) { caffe::DefineCaffeModule(m); }
