// Averages every record of a Datum database into a 1 x C x H x W BlobProto, the
// mean_file a DataTransformer subtracts:
//   compute_image_mean [-backend lmdb] DB OUT.binaryproto
#include <iostream>
#include <string>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/data/datum_io.hpp"
#include "caffe/data/db.hpp"
#include "caffe/proto/caffe.pb.h"
#include "caffe/util/io.hpp"

DEFINE_string(backend, "lmdb", "Database backend; only lmdb is supported");

namespace {

using caffe::ErrorBuilder;

void ComputeMean(const std::string& db_path, const std::string& out_path) {
  auto db = caffe::db::GetDB(FLAGS_backend);
  db->Open(db_path, caffe::db::OpenMode::READ);
  auto cursor = db->NewCursor();
  if (!cursor->valid()) ErrorBuilder() << "data source '" << db_path << "' has no records";

  caffe::Datum datum;
  std::vector<int64_t> shape;
  std::string first_key;
  std::vector<double> sum;  // double: millions of 8-bit values summed without loss
  int64_t count = 0;
  for (; cursor->valid(); cursor->Next()) {
    const std::string key = cursor->key();
    if (!datum.ParseFromString(cursor->value())) {
      ErrorBuilder() << "data source '" << db_path << "': record '" << key << "' is not a Datum";
    }
    try {
      caffe::DecodeDatum(&datum);
    } catch (const caffe::Error& e) {
      ErrorBuilder() << "data source '" << db_path << "', record '" << key << "': " << e.what();
    }
    const std::vector<int64_t> record_shape = caffe::DatumShape(datum);
    if (shape.empty()) {
      shape = record_shape;
      first_key = key;
      sum.assign(static_cast<size_t>(shape[0] * shape[1] * shape[2]), 0.0);
    } else if (record_shape != shape) {
      ErrorBuilder() << "data source '" << db_path << "': record '" << key << "' has shape "
                     << caffe::ShapeToString(record_shape) << " but the first record ('"
                     << first_key << "') has shape " << caffe::ShapeToString(shape);
    }
    const std::string& bytes = datum.data();
    if (!bytes.empty()) {
      if (bytes.size() != sum.size()) {
        ErrorBuilder() << "data source '" << db_path << "': record '" << key << "' holds "
                       << bytes.size() << " bytes; its shape needs " << sum.size();
      }
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += static_cast<uint8_t>(bytes[i]);
    } else {
      if (static_cast<size_t>(datum.float_data_size()) != sum.size()) {
        ErrorBuilder() << "data source '" << db_path << "': record '" << key << "' holds "
                       << datum.float_data_size() << " values; its shape needs " << sum.size();
      }
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += datum.float_data(static_cast<int>(i));
    }
    ++count;
  }

  caffe::BlobProto mean;
  mean.set_num(1);
  mean.set_channels(static_cast<int>(shape[0]));
  mean.set_height(static_cast<int>(shape[1]));
  mean.set_width(static_cast<int>(shape[2]));
  for (double value : sum) mean.add_data(static_cast<float>(value / count));
  caffe::WriteProtoToBinaryFile(mean, out_path);

  std::cout << "averaged " << count << " records of " << caffe::ShapeToString(shape) << " into "
            << out_path << std::endl;
  const int64_t plane = shape[1] * shape[2];
  for (int64_t c = 0; c < shape[0]; ++c) {
    double channel_sum = 0;
    for (int64_t i = 0; i < plane; ++i) channel_sum += mean.data(static_cast<int>(c * plane + i));
    std::cout << "mean of channel " << c << ": " << channel_sum / plane << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;
  gflags::SetUsageMessage(
      "averages the records of a Datum database into a mean file\n"
      "usage: compute_image_mean [-backend lmdb] DB OUT.binaryproto");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // Caffe's line prefix (I1202 11:12:21.020097 ...) without glog 0.6's year, so
  // that BVLC's tools/extra/parse_log.py reads our logs.
  FLAGS_log_year_in_prefix = false;
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::cerr << "usage: compute_image_mean [-backend lmdb] DB OUT.binaryproto\n";
    return 1;
  }
  try {
    ComputeMean(argv[1], argv[2]);
  } catch (const std::exception& e) {  // caffe::Error, and anything unexpected
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
