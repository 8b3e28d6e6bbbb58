// Runs the built convert_imageset tool on images written here and reads the LMDB back.
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifdef USE_OPENCV
#include <opencv2/imgcodecs/imgcodecs.hpp>
#endif

#include "caffe/data/datum_io.hpp"
#include "caffe/data/db.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const std::string kTool = std::string(CAFFE_BINARY_DIR) + "/tools/convert_imageset";

class ConvertImagesetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FileExists(kTool)) << kTool << " is missing; build the tools first";
    dir_ = MakeTempDir("convert_imageset") + "/";
  }

  int Convert(const std::string& flags, std::string* output) {
    return RunCommand(kTool + " " + flags + " " + dir_ + " " + dir_ + "list.txt " + dir_ +
                          "out_lmdb",
                      output);
  }

  // Expects exit status 1 and exactly one line on stderr, "error: ..." containing `text`
  // (progress lines go to stdout, dropped here).
  void ExpectError(const std::string& flags, const std::string& text) {
    std::string output;
    EXPECT_EQ(RunCommand("{ " + kTool + " " + flags + " " + dir_ + " " + dir_ + "list.txt " +
                             dir_ + "out_lmdb >/dev/null; }",
                         &output),
              1)
        << output;
    EXPECT_EQ(output.rfind("error: ", 0), 0u) << output;
    EXPECT_EQ(output.find('\n'), output.size() - 1) << "more than one line: " << output;
    EXPECT_NE(output.find(text), std::string::npos) << output;
  }

  std::vector<std::pair<std::string, Datum>> ReadAll() {
    std::vector<std::pair<std::string, Datum>> records;
    auto db = db::GetDB("lmdb");
    db->Open(dir_ + "out_lmdb", db::OpenMode::READ);
    for (auto cursor = db->NewCursor(); cursor->valid(); cursor->Next()) {
      Datum datum;
      EXPECT_TRUE(datum.ParseFromString(cursor->value()));
      records.emplace_back(cursor->key(), datum);
    }
    return records;
  }

  std::string dir_;
};

#ifdef USE_OPENCV

// Image k: BGR value at (h, w, c) = 20 * k + 10 * h + 3 * w + c.
cv::Mat PatternImage(int k, int height, int width) {
  cv::Mat image(height, width, CV_8UC3);
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < 3; ++c) image.at<cv::Vec3b>(h, w)[c] = 20 * k + 10 * h + 3 * w + c;
  return image;
}

void WriteImages(const std::string& dir, int count, int height = 3, int width = 4) {
  std::ofstream list(dir + "list.txt");
  for (int k = 0; k < count; ++k) {
    const std::string name = "img" + std::to_string(k) + ".png";
    ASSERT_TRUE(cv::imwrite(dir + name, PatternImage(k, height, width)));
    list << name << " " << k + 1 << "\n";
  }
}

TEST_F(ConvertImagesetTest, RawPixelsInListOrder) {
  WriteImages(dir_, 3);
  std::string output;
  ASSERT_EQ(Convert("", &output), 0) << output;
  const auto records = ReadAll();
  ASSERT_EQ(records.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", k);
    EXPECT_EQ(records[k].first, key);
    const Datum& datum = records[k].second;
    EXPECT_EQ(DatumShape(datum), (vector<int64_t>{3, 3, 4}));
    EXPECT_EQ(datum.label(), k + 1);
    EXPECT_FALSE(datum.encoded());
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 4; ++w)
          ASSERT_EQ(static_cast<uint8_t>(datum.data()[(c * 3 + h) * 4 + w]),
                    20 * k + 10 * h + 3 * w + c);
  }
}

TEST_F(ConvertImagesetTest, GrayAndResize) {
  WriteImages(dir_, 2, 6, 8);
  std::string output;
  ASSERT_EQ(Convert("-gray -resize_height=3 -resize_width=5", &output), 0) << output;
  const auto records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(DatumShape(records[0].second), (vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(records[0].second.data().size(), 15u);
}

TEST_F(ConvertImagesetTest, EncodedKeepsFileBytesOrReencodes) {
  WriteImages(dir_, 2);
  std::string output;
  ASSERT_EQ(Convert("-encoded", &output), 0) << output;
  auto records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[1].second.encoded());
  EXPECT_EQ(records[1].second.data(), ReadFileToString(dir_ + "img1.png"));
  Datum decoded = records[1].second;
  ASSERT_TRUE(DecodeDatum(&decoded));
  EXPECT_EQ(static_cast<uint8_t>(decoded.data()[0]), 20);

  ASSERT_EQ(RunCommand("rm -rf " + dir_ + "out_lmdb"), 0);
  ASSERT_EQ(Convert("-encode_type=jpg", &output), 0) << output;
  records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].second.encoded());
  EXPECT_EQ(records[0].second.data().substr(0, 2), "\xff\xd8");  // JPEG start marker

  // Colour files stored as gray must decode natively to one channel.
  ASSERT_EQ(RunCommand("rm -rf " + dir_ + "out_lmdb"), 0);
  ASSERT_EQ(Convert("-encoded -gray", &output), 0) << output;
  records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].second.channels(), 1);
  decoded = records[0].second;
  ASSERT_TRUE(DecodeDatum(&decoded));
  EXPECT_EQ(DatumShape(decoded), (vector<int64_t>{1, 3, 4}));
}

TEST_F(ConvertImagesetTest, ShuffleIsAPermutationAndRepeatable) {
  WriteImages(dir_, 12, 1, 1);
  std::vector<int> orders[2];
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(RunCommand("rm -rf " + dir_ + "out_lmdb"), 0);
    std::string output;
    ASSERT_EQ(Convert("-shuffle", &output), 0) << output;
    for (const auto& record : ReadAll()) orders[run].push_back(record.second.label());
  }
  EXPECT_EQ(orders[0], orders[1]);
  EXPECT_EQ(std::set<int>(orders[0].begin(), orders[0].end()).size(), 12u);
  std::vector<int> list_order;
  for (int k = 1; k <= 12; ++k) list_order.push_back(k);
  EXPECT_NE(orders[0], list_order);
}

TEST_F(ConvertImagesetTest, CheckSizeRejectsMixedSizes) {
  WriteImages(dir_, 1);
  ASSERT_TRUE(cv::imwrite(dir_ + "big.png", PatternImage(0, 5, 5)));
  std::ofstream(dir_ + "list.txt", std::ios::app) << "big.png 0\n";
  std::string output;
  ASSERT_EQ(Convert("", &output), 0) << output;  // fine without -check_size
  ASSERT_EQ(RunCommand("rm -rf " + dir_ + "out_lmdb"), 0);
  ExpectError("-check_size", "list.txt:2: image '" + dir_ + "big.png' is 3x5x5 but the first image is 3x3x4");
}

TEST_F(ConvertImagesetTest, UnreadableImageNamesTheListLine) {
  WriteImages(dir_, 1);
  std::ofstream(dir_ + "broken.png") << "not a PNG";
  std::ofstream(dir_ + "list.txt", std::ios::app) << "broken.png 2\n";
  ExpectError("", "list.txt:2: image '" + dir_ + "broken.png' cannot be decoded");
}

#else

TEST_F(ConvertImagesetTest, NeedsOpenCV) {
  std::ofstream(dir_ + "x.png") << "x";
  std::ofstream(dir_ + "list.txt") << "x.png 0\n";
  ExpectError("", "built without OpenCV");
}

#endif  // USE_OPENCV

TEST_F(ConvertImagesetTest, BadInputs) {
  std::ofstream(dir_ + "list.txt") << "a.png 0\nb.png\n";
  ExpectError("", "list.txt:2: expected '<path> <label>', found 'b.png'");
  std::ofstream(dir_ + "list.txt") << "a.png 0\n";
  ExpectError("-backend=leveldb", "LevelDB is not supported; convert to LMDB");
  ExpectError("-resize_width=4", "give both -resize_width and -resize_height");
  std::string output;
  EXPECT_EQ(RunCommand(kTool + " " + dir_, &output), 1);
  EXPECT_NE(output.find("usage: convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME"),
            std::string::npos)
      << output;
}

}  // namespace
}  // namespace caffe
