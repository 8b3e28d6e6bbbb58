// Turns older forms of net and solver files into the current ones on load, so that
// files written for BVLC Caffe load unchanged.
#ifndef CAFFE_UTIL_UPGRADE_PROTO_HPP_
#define CAFFE_UTIL_UPGRADE_PROTO_HPP_

#include <string>

#include "caffe/proto/caffe.pb.h"

namespace caffe {

// Net-level `input:` with `input_dim:` or `input_shape:` becomes a leading Input
// layer. Returns true if anything changed. Throws caffe::Error for inconsistent
// legacy inputs; `source` names the file in messages.
bool UpgradeNetAsNeeded(const std::string& source, NetParameter* param);
// `solver_type: NESTEROV` becomes `type: "Nesterov"`, and sync_param is upgraded.
bool UpgradeSolverAsNeeded(const std::string& source, SolverParameter* param);
// The per-method exchange settings once set directly in sync_param (`vmr_exponent: 1`,
// `powersgd_rank: 4`) move into their sub-messages (`iwp_param { vmr_exponent: 1 }`,
// `powersgd_param { rank: 4 }`), with one notice line. Throws caffe::Error where a file
// sets a setting both ways. Returns true if anything moved.
bool UpgradeSyncParameter(const std::string& source, SyncParameter* sync);
// The flat per-method settings `sync` still sets ("vmr_exponent, leader"), or "".
std::string FlatMethodFieldsSet(const SyncParameter& sync);

// Refuses a solver text (from `source`) that sets an exchange option that was
// removed, with one line naming the file, the line and the option and where its record
// is, instead of the parser's "no field named". The options are listed in the .cpp.
void RejectRemovedSolverOptions(const std::string& text, const std::string& source);

// Read + upgrade in one step.
void ReadNetParamsFromTextFile(const std::string& filename, NetParameter* param);
void ReadNetParamsFromBinaryFile(const std::string& filename, NetParameter* param);
void ReadSolverParamsFromTextFile(const std::string& filename, SolverParameter* param);

}  // namespace caffe

#endif  // CAFFE_UTIL_UPGRADE_PROTO_HPP_
