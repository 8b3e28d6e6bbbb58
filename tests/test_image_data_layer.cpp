#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifdef USE_OPENCV
#include <opencv2/imgcodecs/imgcodecs.hpp>
#endif

#include "caffe/layers/image_data_layer.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

LayerParameter ImageDataParam(const std::string& list, const std::string& root, int batch_size,
                              const std::string& extra = "") {
  return ParseLayer("name: 'images' type: 'ImageData' top: 'data' top: 'label' "
                    "image_data_param { source: '" + list + "' root_folder: '" + root +
                    "' batch_size: " + std::to_string(batch_size) + " " + extra + " }");
}

#ifdef USE_OPENCV

// Image k: BGR value at (h, w, c) = (20 * k + 10 * h + 3 * w + c) % 256.
cv::Mat PatternImage(int k, int height, int width) {
  cv::Mat image(height, width, CV_8UC3);
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < 3; ++c)
        image.at<cv::Vec3b>(h, w)[c] = static_cast<uchar>((20 * k + 10 * h + 3 * w + c) % 256);
  return image;
}

class ImageDataLayerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("image_data") + "/"; }

  // Writes images img<k>.<ext> for k in [0, count) and a list giving them labels 10 + k.
  std::string WriteImages(int count, const std::string& ext, int height = 4, int width = 5) {
    std::ofstream list(dir_ + "list.txt");
    for (int k = 0; k < count; ++k) {
      const std::string name = "img" + std::to_string(k) + "." + ext;
      EXPECT_TRUE(cv::imwrite(dir_ + name, PatternImage(k, height, width),
                              {cv::IMWRITE_JPEG_QUALITY, 100}));
      list << name << " " << 10 + k << "\n";
    }
    return dir_ + "list.txt";
  }

  std::string dir_;
};

TEST_F(ImageDataLayerTest, PNGExactInListOrder) {
  const std::string list = WriteImages(3, "png");
  ImageDataLayer layer(ImageDataParam(list, dir_, 2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{2, 3, 4, 5}));
  std::vector<int> labels;
  for (int batch = 0; batch < 2; ++batch) {
    layer.Forward({}, tops);
    for (int n = 0; n < 2; ++n) {
      const int k = static_cast<int>(label.cpu_data()[n]) - 10;
      labels.push_back(k);
      for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 4; ++h)
          for (int w = 0; w < 5; ++w)
            ASSERT_EQ(data.data_at(n, c, h, w), (20 * k + 10 * h + 3 * w + c) % 256);
    }
  }
  EXPECT_EQ(labels, (std::vector<int>{0, 1, 2, 0}));
}

TEST_F(ImageDataLayerTest, JPEGApproximately) {
  const std::string list = WriteImages(2, "jpg", 16, 16);
  ImageDataLayer layer(ImageDataParam(list, dir_, 2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  layer.Forward({}, tops);
  double total_error = 0;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 16; ++h)
        for (int w = 0; w < 16; ++w) {
          const float expected = (20 * n + 10 * h + 3 * w + c) % 256;
          const float error = std::fabs(data.data_at(n, c, h, w) - expected);
          // The pattern wraps at 256 in places; JPEG smooths those edges a lot.
          if (expected > 16 && expected < 240) {
            EXPECT_LT(error, 40) << n << c << h << w;
          }
          total_error += error;
        }
  EXPECT_LT(total_error / data.count(), 8.0);
}

TEST_F(ImageDataLayerTest, GrayAndResize) {
  const std::string list = WriteImages(2, "png", 6, 8);
  ImageDataLayer layer(ImageDataParam(list, dir_, 2, "is_color: false new_height: 3 new_width: 4"));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{2, 1, 3, 4}));
  layer.Forward({}, tops);
  EXPECT_EQ(label.cpu_data()[1], 11);
}

TEST_F(ImageDataLayerTest, TransformAndLegacyFieldsApply) {
  const std::string list = WriteImages(1, "png");
  LayerParameter param = ImageDataParam(list, dir_, 1, "crop_size: 2");
  param.mutable_transform_param()->add_mean_value(1);
  param.set_phase(TEST);
  ImageDataLayer layer(param);
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{1, 3, 2, 2}));
  layer.Forward({}, tops);
  // Centre crop of 4x5 starts at (1, 1).
  EXPECT_EQ(data.data_at(0, 2, 0, 0), 10 + 3 + 2 - 1);
}

TEST_F(ImageDataLayerTest, ShuffleVisitsEveryImageEachEpoch) {
  const std::string list = WriteImages(8, "png", 2, 2);
  std::vector<std::vector<int>> epochs[2];
  for (int run = 0; run < 2; ++run) {
    ImageDataLayer layer(ImageDataParam(list, dir_, 8, "shuffle: true"));
    layer.set_context(std::make_shared<Context>(99));
    Blob data, label;
    vector<Blob*> tops{&data, &label};
    layer.SetUp({}, tops);
    for (int epoch = 0; epoch < 3; ++epoch) {
      layer.Forward({}, tops);
      std::vector<int> order(label.cpu_data(), label.cpu_data() + 8);
      EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), 8u);
      epochs[run].push_back(order);
    }
  }
  EXPECT_EQ(epochs[0], epochs[1]);  // same context seed, same order
  const std::vector<int> list_order{10, 11, 12, 13, 14, 15, 16, 17};
  EXPECT_FALSE(epochs[0][0] == list_order && epochs[0][1] == list_order);
  EXPECT_NE(epochs[0][0], epochs[0][1]);  // reshuffled between epochs
}

TEST_F(ImageDataLayerTest, MixedSizesNeedBatchSizeOneOrResize) {
  cv::imwrite(dir_ + "small.png", PatternImage(0, 2, 2));
  cv::imwrite(dir_ + "large.png", PatternImage(0, 3, 4));
  std::ofstream(dir_ + "list.txt") << "small.png 0\nlarge.png 1\n";
  {
    ImageDataLayer layer(ImageDataParam(dir_ + "list.txt", dir_, 1));
    Blob data, label;
    vector<Blob*> tops{&data, &label};
    layer.SetUp({}, tops);
    layer.Forward({}, tops);
    EXPECT_EQ(data.shape(), (vector<int64_t>{1, 3, 2, 2}));
    layer.Forward({}, tops);
    EXPECT_EQ(data.shape(), (vector<int64_t>{1, 3, 3, 4}));
  }
  ImageDataLayer layer(ImageDataParam(dir_ + "list.txt", dir_, 2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  const std::string message = ErrorOf([&] { layer.Forward({}, tops); });
  EXPECT_NE(message.find("line 2: transformed image has shape 1x3x3x4 but the batch's first "
                         "image (line 1) has 1x3x2x2"),
            std::string::npos)
      << message;
}

TEST_F(ImageDataLayerTest, PathsMayContainSpaces) {
  cv::imwrite(dir_ + "my image.png", PatternImage(1, 2, 2));
  std::ofstream(dir_ + "list.txt") << "my image.png 5\r\n\n";
  ImageDataLayer layer(ImageDataParam(dir_ + "list.txt", dir_, 1));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  layer.Forward({}, tops);
  EXPECT_EQ(label.cpu_data()[0], 5);
}

TEST_F(ImageDataLayerTest, UndecodableImageNamesListLineAndPath) {
  const std::string list = WriteImages(1, "png");
  std::ofstream(dir_ + "bad.jpg") << "this is not a JPEG";
  std::ofstream(list, std::ios::app) << "bad.jpg 3\n";
  ImageDataLayer layer(ImageDataParam(list, dir_, 2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(ErrorOf([&] { layer.Forward({}, tops); }),
            "layer 'images' (ImageData): image list '" + list + "' line 2: image '" + dir_ +
                "bad.jpg' cannot be decoded");
}

TEST_F(ImageDataLayerTest, MissingFirstImageFailsAtSetUp) {
  std::ofstream(dir_ + "list.txt") << "nowhere.png 1\n";
  ImageDataLayer layer(ImageDataParam(dir_ + "list.txt", dir_, 1));
  Blob data, label;
  EXPECT_EQ(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }),
            "layer 'images' (ImageData): image list '" + dir_ + "list.txt' line 1: image '" +
                dir_ + "nowhere.png' does not exist");
}

TEST_F(ImageDataLayerTest, MalformedListIsAnError) {
  std::ofstream(dir_ + "list.txt") << "a.png 1\nb.png one\n";
  ImageDataLayer layer(ImageDataParam(dir_ + "list.txt", dir_, 1));
  Blob data, label;
  EXPECT_EQ(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }),
            "layer 'images' (ImageData): image list '" + dir_ +
                "list.txt' line 2: expected '<path> <label>', found 'b.png one'");
  ImageDataLayer missing(ImageDataParam(dir_ + "no_list.txt", dir_, 1));
  EXPECT_NE(ErrorOf([&] { missing.SetUp({}, {&data, &label}); }).find("cannot open image list"),
            std::string::npos);
  ImageDataLayer half_size(ImageDataParam(dir_ + "list.txt", dir_, 1, "new_height: 4"));
  EXPECT_NE(ErrorOf([&] { half_size.SetUp({}, {&data, &label}); })
                .find("give both new_height and new_width"),
            std::string::npos);
}

#else

TEST(ImageDataLayerTest, NeedsOpenCV) {
  ImageDataLayer layer(ImageDataParam("list.txt", "", 1));
  Blob data, label;
  EXPECT_NE(ErrorOf([&] { layer.SetUp({}, {&data, &label}); }).find("built without OpenCV"),
            std::string::npos);
}

#endif  // USE_OPENCV

}  // namespace
}  // namespace caffe
