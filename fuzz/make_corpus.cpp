// Writes the binary seed inputs of fuzz/corpus/ (caffemodel, Datum, IDX): small valid
// files of each kind plus legacy variants, so the fuzzers start inside the parsers
// rather than at their first rejection. Text seeds (prototxt) are kept by hand.
//   fuzz_make_corpus fuzz/corpus
#include <zlib.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "caffe/data/idx_reader.hpp"
#include "caffe/net.hpp"
#include "caffe/util/io.hpp"
#include "fuzz_entry_points.hpp"

namespace {

using caffe::Datum;
using caffe::NetParameter;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  CHECK(out.good()) << path;
}

std::string Gzip(const std::string& bytes) {
  std::string out(compressBound(bytes.size()) + 64, '\0');
  z_stream stream{};
  CHECK_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  CHECK_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

void AppendBigEndian(std::string* bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back(static_cast<char>(value >> shift));
}

// The fuzz_idx input layout: 2-byte labels length, labels file, images file.
std::string IdxInput(uint32_t count, uint32_t rows, uint32_t cols, bool gzip) {
  std::string images, labels;
  AppendBigEndian(&images, caffe::kIdxImagesMagic);
  AppendBigEndian(&images, count);
  AppendBigEndian(&images, rows);
  AppendBigEndian(&images, cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) images.push_back(static_cast<char>(i * 37));
  AppendBigEndian(&labels, caffe::kIdxLabelsMagic);
  AppendBigEndian(&labels, count);
  for (uint32_t i = 0; i < count; ++i) labels.push_back(static_cast<char>(i % 10));
  if (gzip) {
    images = Gzip(images);
    labels = Gzip(labels);
  }
  std::string input;
  input.push_back(static_cast<char>(labels.size() >> 8));
  input.push_back(static_cast<char>(labels.size() & 0xff));
  return input + labels + images;
}

void WriteCaffemodels(const std::string& dir) {
  NetParameter param;
  caffe::ParseProtoFromText(caffe::fuzz::CaffemodelNetText(), "fuzz_lenet", &param);
  param.mutable_state()->set_phase(caffe::TEST);
  caffe::Net net(param, std::make_shared<caffe::Context>(), "fuzz_lenet");
  NetParameter weights;
  net.ToProto(&weights);
  Write(dir + "/lenet_small.caffemodel", weights.SerializeAsString());
  // Legacy 4-d blob dimensions (num/channels/height/width) instead of `shape`.
  NetParameter legacy = weights;
  for (auto& layer : *legacy.mutable_layer()) {
    for (auto& blob : *layer.mutable_blobs()) {
      std::vector<int64_t> dims(blob.shape().dim().begin(), blob.shape().dim().end());
      while (dims.size() < 4) dims.insert(dims.begin(), 1);
      blob.clear_shape();
      blob.set_num(static_cast<int>(dims[0]));
      blob.set_channels(static_cast<int>(dims[1]));
      blob.set_height(static_cast<int>(dims[2]));
      blob.set_width(static_cast<int>(dims[3]));
    }
  }
  Write(dir + "/lenet_small_legacy_dims.caffemodel", legacy.SerializeAsString());
  // One layer only, in double precision: the loader keeps the rest.
  NetParameter partial;
  for (const auto& layer : weights.layer()) {
    if (layer.name() != "ip2") continue;
    auto* copy = partial.add_layer();
    *copy = layer;
    for (auto& blob : *copy->mutable_blobs()) {
      for (float v : blob.data()) blob.add_double_data(v);
      blob.clear_data();
    }
  }
  Write(dir + "/ip2_double.caffemodel", partial.SerializeAsString());
}

void WriteDatums(const std::string& dir) {
  Datum raw;
  raw.set_channels(3);
  raw.set_height(4);
  raw.set_width(5);
  std::string pixels;
  for (int i = 0; i < 60; ++i) pixels.push_back(static_cast<char>(i * 4));
  raw.set_data(pixels);
  raw.set_label(7);
  Write(dir + "/raw_3x4x5.datum", raw.SerializeAsString());

  Datum gray;
  gray.set_channels(1);
  gray.set_height(6);
  gray.set_width(6);
  gray.set_data(std::string(36, '\x80'));
  gray.set_label(1);
  Write(dir + "/raw_1x6x6.datum", gray.SerializeAsString());

  Datum floats;
  floats.set_channels(3);
  floats.set_height(3);
  floats.set_width(3);
  for (int i = 0; i < 27; ++i) floats.add_float_data(0.5f * i - 3.f);
  Write(dir + "/float_3x3x3.datum", floats.SerializeAsString());

  Datum encoded;
  encoded.set_encoded(true);
  encoded.set_data(std::string("\x89PNG\r\n\x1a\n", 8));
  Write(dir + "/reject_encoded_stub.datum", encoded.SerializeAsString());
}

void WriteIdx(const std::string& dir) {
  Write(dir + "/three_4x4.idx", IdxInput(3, 4, 4, false));
  Write(dir + "/two_3x2_gzip.idx", IdxInput(2, 3, 2, true));
  Write(dir + "/empty_1x1.idx", IdxInput(0, 1, 1, false));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus CORPUS_DIR (writes <dir>/fuzz_caffemodel, ...)\n";
    return 1;
  }
  caffe::fuzz::Initialize();
  const std::string root = argv[1];
  WriteCaffemodels(root + "/fuzz_caffemodel");
  WriteDatums(root + "/fuzz_datum_transform");
  WriteIdx(root + "/fuzz_idx");
  std::cout << "wrote the binary seeds under " << root << std::endl;
  return 0;
}
