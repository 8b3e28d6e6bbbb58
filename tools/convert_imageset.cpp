// Converts a set of images into an LMDB of Datum, as Caffe's tool of the same name:
//   convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
// LISTFILE holds "<path> <label>" lines; each path is appended to ROOTFOLDER. Keys
// are the zero-padded record index ("%08d"), so the database's key order is the
// list's (possibly shuffled) order.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/data/datum_io.hpp"
#include "caffe/data/db.hpp"
#include "caffe/proto/caffe.pb.h"

DEFINE_bool(gray, false, "Read the images as single-channel grayscale");
DEFINE_bool(shuffle, false, "Store the images in a shuffled (but repeatable) order");
DEFINE_string(backend, "lmdb", "Database backend; only lmdb is supported");
DEFINE_int32(resize_width, 0, "Resize every image to this width (with -resize_height)");
DEFINE_int32(resize_height, 0, "Resize every image to this height (with -resize_width)");
DEFINE_bool(check_size, false, "Fail unless every image has the same size");
DEFINE_bool(encoded, false, "Store compressed images instead of raw pixels");
DEFINE_string(encode_type, "",
              "Format of the stored compressed images (jpg, png); implies -encoded. "
              "Empty: each file's own format");

namespace {

using caffe::ErrorBuilder;

struct ListEntry {
  std::string path;
  int label;
  int line;
};

std::vector<ListEntry> ReadList(const std::string& list_file) {
  std::ifstream in(list_file);
  if (!in.good()) ErrorBuilder() << "cannot open list file '" << list_file << "'";
  std::vector<ListEntry> entries;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const size_t end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos) continue;
    line.erase(end + 1);
    const size_t split = line.find_last_of(" \t");
    size_t parsed = 0;
    int label = 0;
    bool ok = split != std::string::npos && split > 0;
    if (ok) {
      try {
        label = std::stoi(line.substr(split + 1), &parsed);
        ok = parsed == line.size() - split - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      ErrorBuilder() << list_file << ":" << line_number << ": expected '<path> <label>', found '"
                     << line << "'";
    }
    entries.push_back({line.substr(0, line.find_last_not_of(" \t", split) + 1), label,
                       line_number});
  }
  if (entries.empty()) ErrorBuilder() << "list file '" << list_file << "' names no images";
  return entries;
}

void Convert(const std::string& root, const std::string& list_file, const std::string& db_path) {
  if (FLAGS_resize_width < 0 || FLAGS_resize_height < 0 ||
      (FLAGS_resize_width == 0) != (FLAGS_resize_height == 0)) {
    ErrorBuilder() << "give both -resize_width and -resize_height (positive) or neither, found "
                   << FLAGS_resize_width << " x " << FLAGS_resize_height;
  }
  const bool encoded = FLAGS_encoded || !FLAGS_encode_type.empty();
  std::vector<ListEntry> entries = ReadList(list_file);
  if (FLAGS_shuffle) {
    std::mt19937_64 rng(caffe::Context::kDefaultSeed);  // the same order on every run
    std::shuffle(entries.begin(), entries.end(), rng);
  }
  std::cout << "converting " << entries.size() << " images" << std::endl;

  auto db = caffe::db::GetDB(FLAGS_backend);
  db->Open(db_path, caffe::db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  caffe::Datum datum;
  std::string value;
  std::vector<int64_t> first_shape;
  int count = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ListEntry& entry = entries[i];
    const std::string path = root + entry.path;
    std::string encoding;  // empty: raw pixels
    if (encoded) {
      // Without -encode_type each file keeps its own format, named by its extension.
      encoding = FLAGS_encode_type;
      const size_t dot = entry.path.rfind('.');
      if (encoding.empty()) encoding = dot == std::string::npos ? "png" : entry.path.substr(dot + 1);
    }
    try {
      caffe::ReadImageToDatum(path, entry.label, FLAGS_resize_height, FLAGS_resize_width,
                              !FLAGS_gray, encoding, &datum);
    } catch (const caffe::Error& e) {
      ErrorBuilder() << list_file << ":" << entry.line << ": " << e.what();
    }
    if (FLAGS_check_size) {
      const std::vector<int64_t> shape = caffe::DatumShape(datum);
      if (first_shape.empty()) first_shape = shape;
      if (shape != first_shape) {
        ErrorBuilder() << list_file << ":" << entry.line << ": image '" << path << "' is "
                       << caffe::ShapeToString(shape) << " but the first image is "
                       << caffe::ShapeToString(first_shape) << " (-check_size)";
      }
    }
    datum.SerializeToString(&value);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
    txn->Put(key, value);
    if (++count % 1000 == 0) {
      txn->Commit();
      txn = db->NewTransaction();
      std::cout << "converted " << count << " images" << std::endl;
    }
  }
  txn->Commit();
  db->Close();
  std::cout << "converted " << count << " images" << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;
  gflags::SetUsageMessage(
      "stores the images a list file names as Datum records in an LMDB\n"
      "usage: convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
      "LISTFILE lines are '<path> <label>'; each path is appended to ROOTFOLDER");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // Caffe's line prefix (I1202 11:12:21.020097 ...) without glog 0.6's year, so
  // that BVLC's tools/extra/parse_log.py reads our logs.
  FLAGS_log_year_in_prefix = false;
  google::InitGoogleLogging(argv[0]);
  if (argc != 4) {
    std::cerr << "usage: convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
                 "  (convert_imageset --help lists the flags)\n";
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
