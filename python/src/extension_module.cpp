// The shared library `import caffe` loads (python/caffe/_caffe*.so).
#include "caffe_module.hpp"

PYBIND11_MODULE(_caffe, m) { caffe::DefineCaffeModule(m); }
