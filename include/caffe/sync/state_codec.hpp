// The byte layout of the per-rank exchange state snapshots carry (SaveState /
// RestoreState): a list of float arrays as its count, then each array's length and
// raw floats, counts as 8-byte integers in the machine's order (a snapshot is read
// back on the machine kind that wrote it, as Caffe's own solverstate is).
#ifndef CAFFE_SYNC_STATE_CODEC_HPP_
#define CAFFE_SYNC_STATE_CODEC_HPP_

#include <string>
#include <vector>

namespace caffe {

void AppendFloatArrays(const std::vector<std::vector<float>>& arrays, std::string* out);
// Reads what AppendFloatArrays wrote, from state[*pos]; moves *pos past it. Throws
// caffe::Error naming `what` (e.g. "sync state: POWERSGD section") when the bytes end
// early.
std::vector<std::vector<float>> ReadFloatArrays(const std::string& state, size_t* pos,
                                                const std::string& what);

}  // namespace caffe

#endif  // CAFFE_SYNC_STATE_CODEC_HPP_
