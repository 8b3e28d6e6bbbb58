// Where one top feeds several bottoms, the gradients from each consumer must be
// summed; a Split layer after that top gives each consumer its own copy and adds
// the diffs on the way back.
#ifndef CAFFE_UTIL_INSERT_SPLITS_HPP_
#define CAFFE_UTIL_INSERT_SPLITS_HPP_

#include <string>

#include "caffe/proto/caffe.pb.h"

namespace caffe {

// Loss layers (type ending in "Loss") weigh their first top by 1 unless told otherwise.
bool IsLossType(const std::string& type);

void InsertSplits(const NetParameter& param, NetParameter* param_split);

std::string SplitLayerName(const std::string& layer_name, const std::string& blob_name,
                           int blob_index);
std::string SplitBlobName(const std::string& layer_name, const std::string& blob_name,
                          int blob_index, int split_index);

}  // namespace caffe

#endif  // CAFFE_UTIL_INSERT_SPLITS_HPP_
