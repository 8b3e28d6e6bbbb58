// WindowData: the foreground/background mix of each batch, the crop geometry (exact-size
// copy, square mode, context margins, mirroring), mean and scale, the seed, the image
// cache, and each error message. Images are small PNGs written with OpenCV.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#ifdef USE_OPENCV
#include <opencv2/core/core.hpp>
#include <opencv2/imgcodecs/imgcodecs.hpp>
#endif

#include "caffe/layers/window_data_layer.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// `window_fields` go inside window_data_param, `layer_fields` (transform_param, phase)
// beside it.
LayerParameter WindowDataParam(const std::string& source, const std::string& root,
                               const std::string& window_fields,
                               const std::string& layer_fields = "") {
  return ParseLayer("name: 'windows' type: 'WindowData' top: 'data' top: 'label' " + layer_fields +
                    " window_data_param { source: '" + source + "' root_folder: '" + root + "' " +
                    window_fields + " }");
}

#ifdef USE_OPENCV

const std::string kPrefix = "layer 'windows' (WindowData): ";

// One image's record of a window file: "# index", path, channels, height, width, the
// number of windows, then one "class_index overlap x1 y1 x2 y2" line per window.
std::string Record(int index, const std::string& path, int height, int width,
                   const std::vector<std::string>& windows, int channels = 3) {
  std::string text = "# " + std::to_string(index) + "\n" + path + "\n" + std::to_string(channels) +
                     "\n" + std::to_string(height) + "\n" + std::to_string(width) + "\n" +
                     std::to_string(windows.size()) + "\n";
  for (const std::string& window : windows) text += window + "\n";
  return text;
}

// 20 x 30, in three bands of columns: [0, 10) BGR (10, 20, 30), [10, 20) (40, 50, 60),
// [20, 30) (70, 80, 90).
cv::Mat ThreeBands() {
  cv::Mat image(20, 30, CV_8UC3);
  image.colRange(0, 10).setTo(cv::Scalar(10, 20, 30));
  image.colRange(10, 20).setTo(cv::Scalar(40, 50, 60));
  image.colRange(20, 30).setTo(cv::Scalar(70, 80, 90));
  return image;
}

// The windows of the three-band image: foreground class 1 on the first band and class 2
// on the second; a class-3 window between the thresholds (0.3 and 0.5), never used; two
// background windows on the third band.
const std::vector<std::string> kBandWindows{"1 0.9 0 0 9 19", "2 0.7 10 5 19 14", "3 0.4 20 0 29 9",
                                            "3 0.1 20 0 29 9", "0 0 22 10 27 19"};

// Value at (h, w) of channel c: 10 * h + 3 * w + c, so that every pixel names its place.
cv::Mat PatternImage(int height, int width) {
  cv::Mat image(height, width, CV_8UC3);
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < 3; ++c)
        image.at<cv::Vec3b>(h, w)[c] = static_cast<uchar>(10 * h + 3 * w + c);
  return image;
}

cv::Mat SolidImage(int height, int width, int value) {
  return cv::Mat(height, width, CV_8UC3, cv::Scalar(value, value, value));
}

class WindowDataLayerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("window_data") + "/"; }

  void WriteImage(const std::string& name, const cv::Mat& image) {
    ASSERT_TRUE(cv::imwrite(dir_ + name, image)) << name;
  }
  std::string WriteWindowFile(const std::string& text) {
    std::ofstream(dir_ + "windows.txt") << text;
    return dir_ + "windows.txt";
  }

  // The layer, set up on its own context of `seed`, with data and label tops.
  std::unique_ptr<WindowDataLayer> SetUpLayer(const LayerParameter& param, Blob* data, Blob* label,
                                              uint64_t seed = 1701) {
    auto layer = std::make_unique<WindowDataLayer>(param);
    layer->set_context(std::make_shared<Context>(seed));
    layer->SetUp({}, {data, label});
    return layer;
  }

  // The next `count` batches, data then labels of each, as flat vectors.
  std::vector<std::vector<float>> NextBatches(WindowDataLayer* layer, int count) {
    Blob data, label;
    std::vector<std::vector<float>> batches;
    for (int i = 0; i < count; ++i) {
      layer->Forward({}, {&data, &label});
      batches.emplace_back(data.cpu_data(), data.cpu_data() + data.count());
      batches.emplace_back(label.cpu_data(), label.cpu_data() + label.count());
    }
    return batches;
  }

  std::string SetUpError(const LayerParameter& param) {
    WindowDataLayer layer(param);
    Blob data, label;
    return ErrorOf([&] { layer.SetUp({}, {&data, &label}); });
  }

  std::string dir_;
};

TEST_F(WindowDataLayerTest, BatchTakesTheForegroundFractionAndWindowColours) {
  WriteImage("bands.png", ThreeBands());
  const std::string source = WriteWindowFile(Record(0, "bands.png", 20, 30, kBandWindows));
  Blob data, label;
  auto layer =
      SetUpLayer(WindowDataParam(source, dir_, "batch_size: 8 fg_threshold: 0.5 bg_threshold: 0.3",
                                 "transform_param { crop_size: 4 mean_value: 5 scale: 0.5 }"),
                 &data, &label);
  EXPECT_EQ(data.shape(), (vector<int64_t>{8, 3, 4, 4}));
  EXPECT_EQ(label.shape(), (vector<int64_t>{8}));
  // Each window lies on one band, so each item is that band's colour, (colour - 5) * 0.5.
  const std::map<int, std::vector<float>> colour_of_label{
      {0, {32.5f, 37.5f, 42.5f}}, {1, {2.5f, 7.5f, 12.5f}}, {2, {17.5f, 22.5f, 27.5f}}};
  std::set<int> foreground_labels;
  for (int batch = 0; batch < 10; ++batch) {
    layer->Forward({}, {&data, &label});
    for (int n = 0; n < 8; ++n) {
      const int item_label = static_cast<int>(label.cpu_data()[n]);
      // 0.25 of 8: the last two items are foreground, the first six background.
      if (n < 6) {
        ASSERT_EQ(item_label, 0) << "batch " << batch << " item " << n;
      } else {
        ASSERT_TRUE(item_label == 1 || item_label == 2) << "label " << item_label;
        foreground_labels.insert(item_label);
      }
      for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 4; ++h)
          for (int w = 0; w < 4; ++w)
            ASSERT_EQ(data.data_at(n, c, h, w), colour_of_label.at(item_label)[c])
                << "batch " << batch << " item " << n << " at " << c << h << w;
    }
  }
  EXPECT_EQ(foreground_labels, (std::set<int>{1, 2}));
}

TEST_F(WindowDataLayerTest, WindowOfTheCropSizeIsCopiedUnchanged) {
  WriteImage("pattern.png", PatternImage(8, 10));
  const std::string source = WriteWindowFile(Record(0, "pattern.png", 8, 10, {"1 0.9 2 1 5 4"}));
  Blob data, label;
  auto layer = SetUpLayer(WindowDataParam(source, dir_, "batch_size: 2 fg_fraction: 1",
                                          "transform_param { crop_size: 4 }"),
                          &data, &label);
  layer->Forward({}, {&data, &label});
  for (int n = 0; n < 2; ++n) {
    EXPECT_EQ(label.cpu_data()[n], 1);
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 4; ++w)
          ASSERT_EQ(data.data_at(n, c, h, w), 10 * (h + 1) + 3 * (w + 2) + c) << n << c << h << w;
  }
}

TEST_F(WindowDataLayerTest, SquareModeGrowsTheWindowToASquareAboutItsCentre) {
  // Columns [0, 3) are 50, [3, 5) 100, [5, 8) 200; the window is columns 3-4, rows 2-5.
  cv::Mat image = SolidImage(8, 8, 50);
  image.colRange(3, 5).setTo(cv::Scalar(100, 100, 100));
  image.colRange(5, 8).setTo(cv::Scalar(200, 200, 200));
  WriteImage("columns.png", image);
  const std::string source = WriteWindowFile(Record(0, "columns.png", 8, 8, {"1 0.9 3 2 4 5"}));
  for (const std::string mode : {"warp", "square"}) {
    Blob data, label;
    auto layer = SetUpLayer(
        WindowDataParam(source, dir_, "batch_size: 1 fg_fraction: 1 crop_mode: '" + mode + "'",
                        "transform_param { crop_size: 5 }"),
        &data, &label);
    layer->Forward({}, {&data, &label});
    // warp stretches the 2 x 4 window over the crop. square takes the 5 x 5 box about
    // its centre (4, 4), columns 2-6: one column of 50, two of 100, two of 200.
    const std::vector<float> columns = mode == "warp" ? std::vector<float>{100, 100, 100, 100, 100}
                                                      : std::vector<float>{50, 100, 100, 200, 200};
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(data.data_at(0, c, h, w), columns[w]) << mode << " at " << c << h << w;
  }
}

TEST_F(WindowDataLayerTest, ContextPadIsZeroWhereTheGrownBoxLeavesTheImage) {
  WriteImage("solid.png", SolidImage(8, 8, 100));
  // crop 8, context_pad 2: the box grows 2x about its centre. The corner window 0-3
  // becomes -2..6, 9 pixels warped to 8; the 2 pixels off the image become 2 zero rows
  // and columns. The central window 3-4 becomes 2..6, inside the image: no margin.
  const std::map<std::string, int> margin_of_window{{"1 0.9 0 0 3 3", 2}, {"1 0.9 3 3 4 4", 0}};
  for (const auto& [window, margin] : margin_of_window) {
    const std::string source = WriteWindowFile(Record(0, "solid.png", 8, 8, {window}));
    Blob data, label;
    auto layer =
        SetUpLayer(WindowDataParam(source, dir_, "batch_size: 1 fg_fraction: 1 context_pad: 2",
                                   "transform_param { crop_size: 8 mean_value: 40 scale: 0.5 }"),
                   &data, &label);
    layer->Forward({}, {&data, &label});
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 8; ++h)
        for (int w = 0; w < 8; ++w) {
          // The margin stays 0 after the mean: it is not (0 - 40) * 0.5.
          const float expected = h < margin || w < margin ? 0.f : (100 - 40) * 0.5f;
          ASSERT_EQ(data.data_at(0, c, h, w), expected) << window << " at " << c << h << w;
        }
  }
}

TEST_F(WindowDataLayerTest, MirrorFlipsAtRandomInTrainOnly) {
  WriteImage("pattern.png", PatternImage(8, 10));
  const std::string source = WriteWindowFile(Record(0, "pattern.png", 8, 10, {"1 0.9 2 1 5 4"}));
  for (const std::string phase : {"TRAIN", "TEST"}) {
    Blob data, label;
    auto layer = SetUpLayer(
        WindowDataParam(source, dir_, "batch_size: 16 fg_fraction: 1",
                        "phase: " + phase + " transform_param { crop_size: 4 mirror: true }"),
        &data, &label);
    layer->Forward({}, {&data, &label});
    int mirrored = 0;
    for (int n = 0; n < 16; ++n) {
      // Column 0 of the window is image column 2; mirrored, it is image column 5.
      const bool flipped = data.data_at(n, 0, 0, 0) == 10 + 3 * 5;
      mirrored += flipped;
      for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 4; ++h)
          for (int w = 0; w < 4; ++w)
            ASSERT_EQ(data.data_at(n, c, h, w), 10 * (h + 1) + 3 * ((flipped ? 3 - w : w) + 2) + c)
                << phase << " item " << n << " at " << c << h << w;
    }
    if (phase == "TRAIN") {
      EXPECT_GT(mirrored, 0);
      EXPECT_LT(mirrored, 16);
    } else {
      EXPECT_EQ(mirrored, 0);
    }
  }
}

TEST_F(WindowDataLayerTest, MirrorMovesTheContextMarginToTheOtherSide) {
  WriteImage("solid.png", SolidImage(8, 8, 100));
  const std::string source = WriteWindowFile(Record(0, "solid.png", 8, 8, {"1 0.9 0 0 3 3"}));
  Blob data, label;
  auto layer =
      SetUpLayer(WindowDataParam(source, dir_, "batch_size: 16 fg_fraction: 1 context_pad: 2",
                                 "transform_param { crop_size: 8 mirror: true }"),
                 &data, &label);
  layer->Forward({}, {&data, &label});
  int mirrored = 0;
  for (int n = 0; n < 16; ++n) {
    // The box was cut on the left (2 output columns); mirrored, the cut is on the right.
    const bool flipped = data.data_at(n, 0, 4, 0) != 0;
    mirrored += flipped;
    for (int h = 0; h < 8; ++h)
      for (int w = 0; w < 8; ++w) {
        const bool margin = h < 2 || (flipped ? w >= 6 : w < 2);
        ASSERT_EQ(data.data_at(n, 1, h, w), margin ? 0.f : 100.f) << n << " at " << h << w;
      }
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, 16);
}

TEST_F(WindowDataLayerTest, SameSeedSameBatchesOtherSeedOthers) {
  WriteImage("pattern.png", PatternImage(8, 10));
  const std::string source = WriteWindowFile(Record(
      0, "pattern.png", 8, 10,
      {"1 0.9 0 0 3 3", "2 0.8 4 2 7 5", "3 0.6 6 4 9 7", "0 0.1 1 1 4 4", "5 0.2 5 3 8 6"}));
  const LayerParameter param = WindowDataParam(source, dir_, "batch_size: 4 fg_fraction: 0.5",
                                               "transform_param { crop_size: 4 mirror: true }");
  std::vector<std::vector<float>> runs[3];
  const uint64_t seeds[3] = {5, 5, 6};
  for (int run = 0; run < 3; ++run) {
    Blob data, label;
    auto layer = SetUpLayer(param, &data, &label, seeds[run]);
    runs[run] = NextBatches(layer.get(), 3);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_NE(runs[0], runs[2]);
}

TEST_F(WindowDataLayerTest, MeanFileCentreAndWindowDataParamFieldsWin) {
  WriteImage("solid.png", SolidImage(8, 8, 250));
  const std::string source = WriteWindowFile(Record(0, "solid.png", 8, 8, {"1 0.9 2 2 5 5"}));
  // A 6 x 6 mean, value c * 100 + h * 10 + w; a 4 x 4 crop subtracts its centre (offset 1).
  BlobProto mean;
  for (int dim : {1, 3, 6, 6}) mean.mutable_shape()->add_dim(dim);
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 6; ++h)
      for (int w = 0; w < 6; ++w) mean.add_data(c * 100 + h * 10 + w);
  WriteProtoToBinaryFile(mean, dir_ + "mean.binaryproto");
  // window_data_param's crop_size and scale override transform_param's, as Data's do.
  Blob data, label;
  auto layer =
      SetUpLayer(WindowDataParam(source, dir_,
                                 "batch_size: 1 fg_fraction: 1 crop_size: 4 scale: 2 mean_file: '" +
                                     dir_ + "mean.binaryproto'",
                                 "transform_param { crop_size: 6 scale: 0.5 }"),
                 &data, &label);
  EXPECT_EQ(data.shape(), (vector<int64_t>{1, 3, 4, 4}));
  layer->Forward({}, {&data, &label});
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 4; ++w)
        ASSERT_EQ(data.data_at(0, c, h, w), (250.f - (c * 100 + (h + 1) * 10 + (w + 1))) * 2)
            << c << h << w;
}

TEST_F(WindowDataLayerTest, CachedImagesGiveTheSameBatchesWithoutTheFiles) {
  WriteImage("bands.png", ThreeBands());
  const std::string source = WriteWindowFile(Record(0, "bands.png", 20, 30, kBandWindows));
  const std::string fields = "batch_size: 4 fg_fraction: 0.5 bg_threshold: 0.3";
  const std::string transform = "transform_param { crop_size: 4 mirror: true }";
  std::vector<std::vector<float>> read;
  {
    Blob data, label;
    auto layer = SetUpLayer(WindowDataParam(source, dir_, fields, transform), &data, &label, 3);
    read = NextBatches(layer.get(), 3);
  }
  Blob data, label;
  auto layer = SetUpLayer(WindowDataParam(source, dir_, fields + " cache_images: true", transform),
                          &data, &label, 3);
  ASSERT_EQ(std::remove((dir_ + "bands.png").c_str()), 0);
  // More batches than the prefetch queue holds, so some are made after the removal.
  std::vector<std::vector<float>> cached = NextBatches(layer.get(), 6);
  cached.resize(read.size());
  EXPECT_EQ(cached, read);
}

TEST_F(WindowDataLayerTest, WindowFileErrorsNameTheFileAndLine) {
  WriteImage("bands.png", ThreeBands());
  const std::string transform = "transform_param { crop_size: 4 }";
  auto error_for = [&](const std::string& text, const std::string& fields = "batch_size: 8") {
    return SetUpError(WindowDataParam(WriteWindowFile(text), dir_, fields, transform));
  };
  const std::string file = "window file '" + dir_ + "windows.txt' ";
  const std::string header = "bands.png\n3\n20\n30\n";  // lines 2-5 of a record

  EXPECT_EQ(SetUpError(WindowDataParam(dir_ + "nowhere.txt", dir_, "batch_size: 8", transform)),
            kPrefix + "cannot open window file '" + dir_ + "nowhere.txt'");
  EXPECT_EQ(error_for(""), kPrefix + file + "describes no images");
  EXPECT_EQ(error_for("0\n" + header + "0\n"),
            kPrefix + file + "line 1: expected '# <image index>', found '0'");
  EXPECT_EQ(error_for("# 0\nbands.png\n4\n20\n30\n0\n"),
            kPrefix + file + "line 3: expected 1 or 3 channels, found 4");
  EXPECT_EQ(error_for("# 0\n" + header + "two\n"),
            kPrefix + file + "line 6: expected the number of windows, found 'two'");
  EXPECT_EQ(
      error_for(Record(0, "bands.png", 20, 30, {"1 0.9 0 0 9"})),
      kPrefix + file + "line 7: expected 'class_index overlap x1 y1 x2 y2', found '1 0.9 0 0 9'");
  EXPECT_EQ(error_for("# 0\n" + header + "2\n1 0.9 0 0 9 19\n"),
            kPrefix + file +
                "ends inside the record that starts on line 1: expected window 2 of "
                "2, 'class_index overlap x1 y1 x2 y2'");
  EXPECT_EQ(error_for(Record(0, "bands.png", 20, 30, {"1 0.9 0 0 30 19"})),
            kPrefix + file +
                "line 7: window (x1 y1 x2 y2) = (0 0 30 19) does not lie within the "
                "image of 20 x 30 pixels (coordinates are 0-based and inclusive)");
  EXPECT_EQ(error_for(Record(0, "bands.png", 20, 30, {"0 0.9 0 0 9 19"})),
            kPrefix + file +
                "line 7: foreground window (overlap 0.9 >= fg_threshold 0.5) has "
                "class 0; classes start at 1, label 0 is the background");
  EXPECT_EQ(error_for(Record(0, "bands.png", 20, 30, {"0 0.1 0 0 9 19"})),
            kPrefix + file +
                "has no foreground windows (overlap >= fg_threshold 0.5), but "
                "fg_fraction 0.25 takes 2 of each batch of 8");
  EXPECT_EQ(error_for(Record(0, "bands.png", 20, 30, {"1 0.9 0 0 9 19"})),
            kPrefix + file +
                "has no background windows (overlap < bg_threshold 0.5), but 6 of "
                "each batch of 8 are background (fg_fraction 0.25)");
  // Only foreground windows serve a batch that is all foreground.
  EXPECT_EQ(
      error_for(Record(0, "bands.png", 20, 30, {"1 0.9 0 0 9 19"}), "batch_size: 8 fg_fraction: 1"),
      "<no error>");
}

TEST_F(WindowDataLayerTest, ImageErrorsNameTheWindowFileLine) {
  WriteImage("bands.png", ThreeBands());
  const std::string transform = "transform_param { crop_size: 4 }";
  const std::string file = "window file '" + dir_ + "windows.txt' ";
  // The first used image is read at setup.
  EXPECT_EQ(
      SetUpError(WindowDataParam(WriteWindowFile(Record(0, "nowhere.png", 20, 30, kBandWindows)),
                                 dir_, "batch_size: 8", transform)),
      kPrefix + file + "line 2: image '" + dir_ + "nowhere.png' does not exist");
  EXPECT_EQ(
      SetUpError(WindowDataParam(WriteWindowFile(Record(0, "bands.png", 20, 31, kBandWindows)),
                                 dir_, "batch_size: 8", transform)),
      kPrefix + file + "line 2: image '" + dir_ +
          "bands.png' is 20 x 30 pixels but the window file gives 20 x 31");
  // Others when a window in them is drawn: the background comes from bad.png only.
  std::ofstream(dir_ + "bad.png") << "this is not a PNG";
  const std::string source = WriteWindowFile(Record(0, "bands.png", 20, 30, {"1 0.9 0 0 9 19"}) +
                                             Record(1, "bad.png", 20, 30, {"0 0 0 0 9 19"}));
  Blob data, label;
  auto layer = SetUpLayer(
      WindowDataParam(source, dir_, "batch_size: 2 fg_fraction: 0.5", transform), &data, &label);
  EXPECT_EQ(ErrorOf([&] {
              layer->Forward({}, {&data, &label});
            }),
            kPrefix + file + "line 9: image '" + dir_ + "bad.png' cannot be decoded");
}

TEST_F(WindowDataLayerTest, ParameterErrors) {
  WriteImage("bands.png", ThreeBands());
  const std::string source = WriteWindowFile(Record(0, "bands.png", 20, 30, kBandWindows));
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "batch_size: 8")),
            kPrefix +
                "crop_size must be positive (set transform_param.crop_size): every window "
                "is warped to crop_size x crop_size");
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "", "transform_param { crop_size: 4 }")),
            kPrefix + "window_data_param.batch_size must be positive");
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "batch_size: 8 context_pad: 2",
                                       "transform_param { crop_size: 4 }")),
            kPrefix +
                "window_data_param.context_pad 2 leaves no room for the window in a crop "
                "of 4 pixels");
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "batch_size: 8 crop_mode: 'stretch'",
                                       "transform_param { crop_size: 4 }")),
            kPrefix + "window_data_param.crop_mode must be 'warp' or 'square', found 'stretch'");
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "batch_size: 8 fg_fraction: 1.5",
                                       "transform_param { crop_size: 4 }")),
            kPrefix + "window_data_param.fg_fraction must lie in [0, 1], found 1.5");
  EXPECT_EQ(SetUpError(WindowDataParam(source, dir_, "batch_size: 8",
                                       "transform_param { crop_size: 4 mean_value: 1 "
                                       "mean_value: 2 }")),
            kPrefix + "mean_value gives 2 values; expected 1 or one per channel (3)");
}

#else

TEST(WindowDataLayerTest, NeedsOpenCV) {
  WindowDataLayer layer(
      WindowDataParam("windows.txt", "", "batch_size: 1", "transform_param { crop_size: 4 }"));
  Blob data, label;
  EXPECT_NE(ErrorOf([&] {
              layer.SetUp({}, {&data, &label});
            }).find("built without OpenCV"),
            std::string::npos);
}

#endif  // USE_OPENCV

}  // namespace
}  // namespace caffe
