// Converts an MNIST-format IDX pair (images, labels; gzipped or plain) into an LMDB
// of Datum records: 1 x rows x cols uint8 pixels and the label, keyed "%08d" by
// record index so the database's key order is the files' order.
//   convert_idx IMAGES LABELS OUT_DB
#include <cstdio>
#include <iostream>
#include <string>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "caffe/common.hpp"
#include "caffe/data/db.hpp"
#include "caffe/data/idx_reader.hpp"
#include "caffe/proto/caffe.pb.h"

namespace {

constexpr int kRecordsPerCommit = 1000;

void Convert(const std::string& images_path, const std::string& labels_path,
             const std::string& db_path) {
  const caffe::IdxDataset dataset = caffe::IdxDataset::FromFiles(images_path, labels_path);
  const uint32_t num_images = dataset.size();
  const uint32_t rows = dataset.rows();
  const uint32_t cols = dataset.cols();

  auto db = caffe::db::GetDB("lmdb");
  db->Open(db_path, caffe::db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  caffe::Datum datum;
  std::string value;
  char key[16];
  for (uint32_t i = 0; i < num_images; ++i) {
    dataset.ToDatum(i, &datum);
    datum.SerializeToString(&value);
    std::snprintf(key, sizeof(key), "%08u", i);
    txn->Put(key, value);
    if ((i + 1) % kRecordsPerCommit == 0) {
      txn->Commit();
      txn = db->NewTransaction();
    }
  }
  txn->Commit();
  db->Close();
  std::cout << "wrote " << num_images << " records of 1x" << rows << "x" << cols << " to "
            << db_path << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // the one-line result, not the library's progress notes
  gflags::SetUsageMessage(
      "converts MNIST-format IDX files (gzipped or plain) into an LMDB of Datum\n"
      "usage: convert_idx IMAGES LABELS OUT_DB");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // Caffe's line prefix (I1202 11:12:21.020097 ...) without glog 0.6's year, so
  // that BVLC's tools/extra/parse_log.py reads our logs.
  FLAGS_log_year_in_prefix = false;
  google::InitGoogleLogging(argv[0]);
  if (argc != 4) {
    std::cerr << "usage: convert_idx IMAGES LABELS OUT_DB\n"
                 "  IMAGES, LABELS: IDX files as MNIST distributes them (gzipped or plain)\n"
                 "  OUT_DB: the LMDB to create (must not exist)\n";
    return 1;
  }
  try {
    Convert(argv[1], argv[2], argv[3]);
  } catch (const std::exception& e) {  // caffe::Error, and anything unexpected
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
