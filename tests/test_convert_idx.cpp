// Runs the built convert_idx tool on IDX files written here and reads the LMDB back.
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "caffe/data/db.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const std::string kTool = std::string(CAFFE_BINARY_DIR) + "/tools/convert_idx";

void AppendBigEndian(std::string* bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back(static_cast<char>(value >> shift));
}

// count images of rows x cols with pixel (i, k) = (i * 31 + k * 7) % 256, labels i % 10.
std::string ImagesIdx(uint32_t count, uint32_t rows, uint32_t cols, uint32_t magic = 2051) {
  std::string bytes;
  AppendBigEndian(&bytes, magic);
  AppendBigEndian(&bytes, count);
  AppendBigEndian(&bytes, rows);
  AppendBigEndian(&bytes, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k) bytes.push_back(static_cast<char>((i * 31 + k * 7) % 256));
  return bytes;
}

std::string LabelsIdx(uint32_t count, uint32_t magic = 2049) {
  std::string bytes;
  AppendBigEndian(&bytes, magic);
  AppendBigEndian(&bytes, count);
  for (uint32_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(i % 10));
  return bytes;
}

void WritePlain(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void WriteGzipped(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
}

class ConvertIdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FileExists(kTool)) << kTool << " is missing; build the tools first";
    dir_ = MakeTempDir("convert_idx") + "/";
  }

  int Convert(const std::string& images, const std::string& labels, const std::string& out,
              std::string* output) {
    return RunCommand(kTool + " " + images + " " + labels + " " + out, output);
  }

  // Expects exit status 1 and exactly one output line, "error: ..." containing `text`.
  void ExpectError(const std::string& images, const std::string& labels,
                   const std::string& text) {
    std::string output;
    EXPECT_EQ(Convert(images, labels, dir_ + "out_lmdb", &output), 1) << output;
    EXPECT_EQ(output.rfind("error: ", 0), 0u) << output;
    EXPECT_EQ(output.find('\n'), output.size() - 1) << "more than one line: " << output;
    EXPECT_NE(output.find(text), std::string::npos) << output;
  }

  void CheckRoundTrip(const std::string& db_path, uint32_t count, uint32_t rows, uint32_t cols) {
    auto db = db::GetDB("lmdb");
    db->Open(db_path, db::OpenMode::READ);
    auto cursor = db->NewCursor();
    const std::string images = ImagesIdx(count, rows, cols);
    for (uint32_t i = 0; i < count; ++i) {
      ASSERT_TRUE(cursor->valid()) << "only " << i << " records";
      char key[16];
      std::snprintf(key, sizeof(key), "%08u", i);
      EXPECT_EQ(cursor->key(), key);
      Datum datum;
      ASSERT_TRUE(datum.ParseFromString(cursor->value()));
      EXPECT_EQ(datum.channels(), 1);
      EXPECT_EQ(datum.height(), static_cast<int>(rows));
      EXPECT_EQ(datum.width(), static_cast<int>(cols));
      EXPECT_FALSE(datum.encoded());
      EXPECT_EQ(datum.label(), static_cast<int>(i % 10));
      EXPECT_EQ(datum.data(), images.substr(16 + i * rows * cols, rows * cols));
      cursor->Next();
    }
    EXPECT_FALSE(cursor->valid());
  }

  std::string dir_;
};

TEST_F(ConvertIdxTest, PlainFilesRoundTripByteExact) {
  WritePlain(dir_ + "images", ImagesIdx(25, 28, 28));
  WritePlain(dir_ + "labels", LabelsIdx(25));
  std::string output;
  ASSERT_EQ(Convert(dir_ + "images", dir_ + "labels", dir_ + "out_lmdb", &output), 0) << output;
  EXPECT_NE(output.find("wrote 25 records of 1x28x28"), std::string::npos) << output;
  CheckRoundTrip(dir_ + "out_lmdb", 25, 28, 28);
}

TEST_F(ConvertIdxTest, GzippedFilesRoundTripByteExact) {
  // More than one commit's worth of records.
  WriteGzipped(dir_ + "images.gz", ImagesIdx(2100, 3, 4));
  WriteGzipped(dir_ + "labels.gz", LabelsIdx(2100));
  std::string output;
  ASSERT_EQ(Convert(dir_ + "images.gz", dir_ + "labels.gz", dir_ + "out_lmdb", &output), 0)
      << output;
  CheckRoundTrip(dir_ + "out_lmdb", 2100, 3, 4);
}

TEST_F(ConvertIdxTest, WrongMagicNumber) {
  WritePlain(dir_ + "images", ImagesIdx(2, 2, 2));
  WritePlain(dir_ + "labels", LabelsIdx(2));
  ExpectError(dir_ + "labels", dir_ + "labels", "bad IDX magic number 2049, expected 2051");
  ExpectError(dir_ + "images", dir_ + "images", "bad IDX magic number 2051, expected 2049");
}

TEST_F(ConvertIdxTest, TruncatedFiles) {
  const std::string images = ImagesIdx(5, 4, 4);
  WritePlain(dir_ + "short_images", images.substr(0, images.size() - 3));
  WritePlain(dir_ + "labels", LabelsIdx(5));
  ExpectError(dir_ + "short_images", dir_ + "labels",
              "short_images: truncated: 5 items need 96 bytes, found 93");
  WritePlain(dir_ + "header_only", images.substr(0, 10));
  ExpectError(dir_ + "header_only", dir_ + "labels", "truncated IDX header");
  // A gzip stream cut in the middle.
  WriteGzipped(dir_ + "images.gz", ImagesIdx(200, 28, 28));
  const std::string gz = ReadFileToString(dir_ + "images.gz");
  WritePlain(dir_ + "cut.gz", gz.substr(0, gz.size() / 2));
  ExpectError(dir_ + "cut.gz", dir_ + "labels", "cut.gz: truncated gzip data");
}

TEST_F(ConvertIdxTest, CountsMustAgree) {
  WritePlain(dir_ + "images", ImagesIdx(4, 2, 2));
  WritePlain(dir_ + "labels", LabelsIdx(3));
  ExpectError(dir_ + "images", dir_ + "labels", "holds 4 images but");
}

TEST_F(ConvertIdxTest, MissingInputAndExistingOutput) {
  ExpectError(dir_ + "nothing", dir_ + "nothing", "nothing: cannot open");
  WritePlain(dir_ + "images", ImagesIdx(1, 2, 2));
  WritePlain(dir_ + "labels", LabelsIdx(1));
  std::string output;
  ASSERT_EQ(Convert(dir_ + "images", dir_ + "labels", dir_ + "out_lmdb", &output), 0) << output;
  ExpectError(dir_ + "images", dir_ + "labels", "cannot create LMDB (File exists)");
}

TEST_F(ConvertIdxTest, MissingArgumentsPrintUsage) {
  std::string output;
  EXPECT_EQ(RunCommand(kTool + " only_one_arg", &output), 1);
  EXPECT_NE(output.find("usage: convert_idx IMAGES LABELS OUT_DB"), std::string::npos) << output;
}

TEST_F(ConvertIdxTest, FashionMNISTTestSet) {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const std::string images = root + "t10k-images-idx3-ubyte.gz";
  const std::string labels = root + "t10k-labels-idx1-ubyte.gz";
  if (!FileExists(images) || !FileExists(labels)) GTEST_SKIP() << "dataset-fashion-mnist absent";
  std::string output;
  ASSERT_EQ(Convert(images, labels, dir_ + "t10k_lmdb", &output), 0) << output;
  auto db = db::GetDB("lmdb");
  db->Open(dir_ + "t10k_lmdb", db::OpenMode::READ);
  int count = 0;
  std::vector<int> per_class(10, 0);
  Datum datum;
  for (auto cursor = db->NewCursor(); cursor->valid(); cursor->Next(), ++count) {
    ASSERT_TRUE(datum.ParseFromString(cursor->value()));
    ASSERT_EQ(datum.data().size(), 28u * 28u);
    ASSERT_GE(datum.label(), 0);
    ASSERT_LT(datum.label(), 10);
    ++per_class[datum.label()];
  }
  EXPECT_EQ(count, 10000);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 1000) << "class " << c;
}

}  // namespace
}  // namespace caffe
