// A layer's parameter list as Python sees it (BlobVec, BVLC's name): a reference to
// the C++ vector, not a copy, so that Python code appending to it (a Python layer's
// self.blobs.add_blob) adds to the layer. Every file that converts it includes this.
#ifndef CAFFE_PYTHON_BLOB_VEC_HPP_
#define CAFFE_PYTHON_BLOB_VEC_HPP_

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include "caffe/blob.hpp"

PYBIND11_MAKE_OPAQUE(std::vector<std::shared_ptr<caffe::Blob>>)

#endif  // CAFFE_PYTHON_BLOB_VEC_HPP_
