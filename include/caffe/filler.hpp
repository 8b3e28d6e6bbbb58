// Weight initialisation by FillerParameter: constant, uniform, gaussian (optionally
// sparse), positive_unitball, xavier, msra, bilinear.
#ifndef CAFFE_FILLER_HPP_
#define CAFFE_FILLER_HPP_

#include <random>

#include "caffe/blob.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

// Throws caffe::Error for an unknown filler type.
void FillBlob(const FillerParameter& param, Blob* blob, std::mt19937_64& rng);
bool IsKnownFiller(const string& type);

}  // namespace caffe

#endif  // CAFFE_FILLER_HPP_
