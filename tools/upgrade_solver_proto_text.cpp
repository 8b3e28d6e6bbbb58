// Writes a solver file in the current form (BVLC's tool of the same name):
//   upgrade_solver_proto_text IN.prototxt OUT.prototxt
// `solver_type: SGD` becomes `type: "SGD"`, and the exchange settings that sync_param
// once held flat move into their method's sub-message (iwp_param, powersgd_param,
// scalecom_param). Comments are not kept: the output is protobuf's text format. OUT
// may be IN; it is replaced atomically. The caffe tool reads either form.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <iostream>
#include <string>

#include "caffe/proto/caffe.pb.h"
#include "caffe/util/error.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/upgrade_proto.hpp"

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  // The load's own notice of what moved would repeat what this tool reports.
  FLAGS_minloglevel = 2;
  gflags::SetUsageMessage(
      "writes a solver file in the current form\n"
      "usage: upgrade_solver_proto_text IN.prototxt OUT.prototxt");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::cerr << "usage: upgrade_solver_proto_text IN.prototxt OUT.prototxt\n";
    return 1;
  }
  try {
    const std::string text = caffe::ReadFileToString(argv[1]);
    caffe::RejectRemovedSolverOptions(text, argv[1]);
    caffe::SolverParameter param;
    caffe::ParseProtoFromText(text, argv[1], &param);
    const bool changed = caffe::UpgradeSolverAsNeeded(argv[1], &param);
    caffe::WriteProtoToTextFile(param, argv[2]);
    std::cout << (changed ? "upgraded " : "already current: ") << argv[1] << " -> " << argv[2]
              << std::endl;
  } catch (const std::exception& e) {  // caffe::Error, and anything unexpected
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
