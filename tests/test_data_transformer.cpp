#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifdef USE_OPENCV
#include <opencv2/imgcodecs/imgcodecs.hpp>
#endif

#include "caffe/data/data_transformer.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

// A raw uint8 datum whose pixel (c, h, w) holds `first + its CHW index`.
Datum CountingDatum(int channels, int height, int width, int first = 0) {
  Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  std::string data;
  for (int i = 0; i < channels * height * width; ++i) data.push_back(static_cast<char>(first + i));
  datum.set_data(data);
  datum.set_label(7);
  return datum;
}

TransformationParameter Params(const std::string& text) {
  TransformationParameter param;
  ParseProtoFromText(text, "<test transform>", &param);
  return param;
}

vector<float> TransformAll(DataTransformer* transformer, const Datum& datum) {
  const vector<int64_t> shape = transformer->InferBlobShape(datum);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  vector<float> out(count, -999.f);
  transformer->Transform(datum, out.data());
  return out;
}

TEST(DataTransformerTest, PlainCopy) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params(""), TRAIN, rng);
  const Datum datum = CountingDatum(2, 3, 4);
  EXPECT_EQ(transformer.InferBlobShape(datum), (vector<int64_t>{1, 2, 3, 4}));
  const vector<float> out = TransformAll(&transformer, datum);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[i], i);
}

TEST(DataTransformerTest, MeanValuePerChannelThenScale) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("scale: 0.5 mean_value: 10 mean_value: 20"), TEST, rng);
  const vector<float> out = TransformAll(&transformer, CountingDatum(2, 2, 2, 30));
  // channel 0 holds 30..33, channel 1 holds 34..37
  const vector<float> expected{10, 10.5f, 11, 11.5f, 7, 7.5f, 8, 8.5f};
  EXPECT_EQ(out, expected);
}

TEST(DataTransformerTest, SingleMeanValueAppliesToEveryChannel) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("mean_value: 3"), TEST, rng);
  const vector<float> out = TransformAll(&transformer, CountingDatum(3, 1, 2));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], i - 3);
}

TEST(DataTransformerTest, MeanValueCountMustMatchChannels) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("mean_value: 1 mean_value: 2"), TEST, rng);
  const std::string message = ErrorOf([&] { TransformAll(&transformer, CountingDatum(3, 2, 2)); });
  EXPECT_NE(message.find("mean_value gives 2 values; expected 1 or one per channel (3)"),
            std::string::npos)
      << message;
}

class MeanFileTest : public ::testing::Test {
 protected:
  // Writes a 1 x channels x height x width mean whose value at index i is i / 2.
  std::string WriteMean(int channels, int height, int width) {
    BlobProto mean;
    mean.set_num(1);
    mean.set_channels(channels);
    mean.set_height(height);
    mean.set_width(width);
    for (int i = 0; i < channels * height * width; ++i) mean.add_data(i * 0.5f);
    const std::string path = MakeTempDir("mean") + "/mean.binaryproto";
    WriteProtoToBinaryFile(mean, path);
    return path;
  }
};

TEST_F(MeanFileTest, SubtractsPixelwiseMean) {
  const std::string path = WriteMean(2, 3, 3);
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("mean_file: '" + path + "' scale: 2"), TEST, rng);
  const vector<float> out = TransformAll(&transformer, CountingDatum(2, 3, 3));
  ASSERT_EQ(out.size(), 18u);
  for (int i = 0; i < 18; ++i) EXPECT_FLOAT_EQ(out[i], (i - i * 0.5f) * 2) << i;
}

TEST_F(MeanFileTest, MeanIsTakenAtUncroppedPosition) {
  const std::string path = WriteMean(1, 4, 4);
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("mean_file: '" + path + "' crop_size: 2"), TEST, rng);
  const vector<float> out = TransformAll(&transformer, CountingDatum(1, 4, 4, 100));
  // Centre crop: rows 1-2, cols 1-2 -> indices 5, 6, 9, 10; mean there is index / 2.
  const vector<float> expected{100 + 5 - 2.5f, 100 + 6 - 3.f, 100 + 9 - 4.5f, 100 + 10 - 5.f};
  EXPECT_EQ(out, expected);
}

TEST_F(MeanFileTest, ShapeMismatchNamesFileAndBothShapes) {
  const std::string path = WriteMean(1, 3, 3);
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("mean_file: '" + path + "'"), TEST, rng);
  const std::string message = ErrorOf([&] { TransformAll(&transformer, CountingDatum(3, 4, 5)); });
  EXPECT_EQ(message, "mean_file '" + path + "' has shape 1x1x3x3 but the data has shape 3x4x5");
}

TEST_F(MeanFileTest, MissingFileIsAnError) {
  std::mt19937_64 rng(1);
  const std::string message = ErrorOf([&] {
    DataTransformer transformer(Params("mean_file: '/nonexistent/mean.binaryproto'"), TEST, rng);
  });
  EXPECT_NE(message.find("/nonexistent/mean.binaryproto"), std::string::npos) << message;
}

TEST(DataTransformerTest, MeanFileAndMeanValueAreExclusive) {
  std::mt19937_64 rng(1);
  EXPECT_THROW(DataTransformer(Params("mean_file: 'm' mean_value: 1"), TEST, rng), Error);
  EXPECT_THROW(DataTransformer(Params("force_color: true force_gray: true"), TEST, rng), Error);
}

TEST(DataTransformerTest, CenterCropInTest) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("crop_size: 3"), TEST, rng);
  const Datum datum = CountingDatum(1, 5, 6);
  EXPECT_EQ(transformer.InferBlobShape(datum), (vector<int64_t>{1, 1, 3, 3}));
  // Offsets (5-3)/2 = 1 and (6-3)/2 = 1.
  const vector<float> expected{7, 8, 9, 13, 14, 15, 19, 20, 21};
  for (int trial = 0; trial < 5; ++trial) EXPECT_EQ(TransformAll(&transformer, datum), expected);
}

TEST(DataTransformerTest, RandomCropInTrainCoversEveryOffset) {
  std::mt19937_64 rng(42);
  DataTransformer transformer(Params("crop_size: 3"), TRAIN, rng);
  const Datum datum = CountingDatum(2, 5, 5);
  std::set<std::pair<int, int>> offsets;
  for (int trial = 0; trial < 200; ++trial) {
    const vector<float> out = TransformAll(&transformer, datum);
    ASSERT_EQ(out.size(), 18u);
    // The top-left value locates the window; every value must then match it exactly.
    const int h_off = static_cast<int>(out[0]) / 5;
    const int w_off = static_cast<int>(out[0]) % 5;
    ASSERT_LE(h_off, 2);
    ASSERT_LE(w_off, 2);
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 3; ++w)
          ASSERT_EQ(out[(c * 3 + h) * 3 + w], c * 25 + (h + h_off) * 5 + (w + w_off));
    offsets.insert({h_off, w_off});
  }
  EXPECT_EQ(offsets.size(), 9u);
}

TEST(DataTransformerTest, SameSeedSameCrops) {
  const Datum datum = CountingDatum(1, 8, 8);
  std::mt19937_64 rng_a(5), rng_b(5);
  DataTransformer a(Params("crop_size: 4 mirror: true"), TRAIN, rng_a);
  DataTransformer b(Params("crop_size: 4 mirror: true"), TRAIN, rng_b);
  for (int trial = 0; trial < 10; ++trial) EXPECT_EQ(TransformAll(&a, datum), TransformAll(&b, datum));
}

TEST(DataTransformerTest, MirrorIsRandomInTrain) {
  std::mt19937_64 rng(3);
  DataTransformer transformer(Params("mirror: true"), TRAIN, rng);
  const Datum datum = CountingDatum(1, 2, 3);
  const vector<float> plain{0, 1, 2, 3, 4, 5};
  const vector<float> mirrored{2, 1, 0, 5, 4, 3};
  int num_mirrored = 0;
  const int trials = 100;
  for (int trial = 0; trial < trials; ++trial) {
    const vector<float> out = TransformAll(&transformer, datum);
    ASSERT_TRUE(out == plain || out == mirrored);
    num_mirrored += out == mirrored;
  }
  EXPECT_GT(num_mirrored, 20);
  EXPECT_LT(num_mirrored, 80);
}

TEST(DataTransformerTest, NoMirrorInTest) {
  std::mt19937_64 rng(3);
  DataTransformer transformer(Params("mirror: true"), TEST, rng);
  const Datum datum = CountingDatum(1, 2, 3);
  for (int trial = 0; trial < 20; ++trial) {
    EXPECT_EQ(TransformAll(&transformer, datum), (vector<float>{0, 1, 2, 3, 4, 5}));
  }
}

TEST(DataTransformerTest, CropMirrorAndMeanTogether) {
  // Draw the same mirror and offsets the transformer will, then build the expected
  // output with a naive loop.
  const Datum datum = CountingDatum(3, 6, 7);
  const TransformationParameter param =
      Params("crop_size: 4 mirror: true scale: 0.25 mean_value: 1 mean_value: 2 mean_value: 3");
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    DataTransformer transformer(param, TRAIN, rng);
    const bool mirror = replay() % 2 == 1;
    const int h_off = static_cast<int>(replay() % 3);
    const int w_off = static_cast<int>(replay() % 4);
    const vector<float> out = TransformAll(&transformer, datum);
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 4; ++w) {
          const int source_w = mirror ? 3 - w : w;
          const float pixel = c * 42 + (h + h_off) * 7 + source_w + w_off;
          ASSERT_EQ(out[(c * 4 + h) * 4 + w], (pixel - (c + 1)) * 0.25f) << seed;
        }
  }
}

TEST(DataTransformerTest, FloatData) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("scale: 2 mean_value: 0.5"), TEST, rng);
  Datum datum;
  datum.set_channels(1);
  datum.set_height(1);
  datum.set_width(3);
  for (float v : {1.5f, -2.f, 0.25f}) datum.add_float_data(v);
  EXPECT_EQ(TransformAll(&transformer, datum), (vector<float>{2, -5, -0.5f}));
}

TEST(DataTransformerTest, BlobDestination) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params(""), TEST, rng);
  Blob blob({1, 1, 2, 2});
  transformer.Transform(CountingDatum(1, 2, 2, 9), &blob);
  EXPECT_EQ(vector<float>(blob.cpu_data(), blob.cpu_data() + 4), (vector<float>{9, 10, 11, 12}));
  Blob wrong({1, 1, 2, 3});
  EXPECT_THROW(transformer.Transform(CountingDatum(1, 2, 2), &wrong), Error);
}

TEST(DataTransformerTest, InconsistentDatumsAreErrors) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("crop_size: 4"), TEST, rng);
  EXPECT_NE(ErrorOf([&] { TransformAll(&transformer, CountingDatum(1, 3, 8)); })
                .find("crop_size 4 is larger than the data (1x3x8)"),
            std::string::npos);
  DataTransformer plain(Params(""), TEST, rng);
  Datum short_datum = CountingDatum(1, 2, 2);
  short_datum.set_height(3);
  EXPECT_NE(ErrorOf([&] { TransformAll(&plain, short_datum); }).find("holds 4 bytes; expected 6"),
            std::string::npos);
}

#ifdef USE_OPENCV

// A 3-channel image whose BGR value at (h, w, c) is 10*h + 3*w + c.
cv::Mat PatternImage(int height, int width) {
  cv::Mat image(height, width, CV_8UC3);
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < 3; ++c) image.at<cv::Vec3b>(h, w)[c] = 10 * h + 3 * w + c;
  return image;
}

Datum EncodedDatum(const cv::Mat& image, const std::string& ext) {
  std::vector<uchar> bytes;
  EXPECT_TRUE(cv::imencode(ext, image, bytes));
  Datum datum;
  datum.set_data(std::string(bytes.begin(), bytes.end()));
  datum.set_encoded(true);
  datum.set_label(4);
  return datum;
}

TEST(DataTransformerTest, EncodedPNGDecodesExactly) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params(""), TEST, rng);
  const Datum datum = EncodedDatum(PatternImage(4, 5), ".png");
  EXPECT_EQ(transformer.InferBlobShape(datum), (vector<int64_t>{1, 3, 4, 5}));
  const vector<float> out = TransformAll(&transformer, datum);
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 5; ++w) ASSERT_EQ(out[(c * 4 + h) * 5 + w], 10 * h + 3 * w + c);
}

TEST(DataTransformerTest, ForceGrayAndForceColor) {
  std::mt19937_64 rng(1);
  DataTransformer gray(Params("force_gray: true"), TEST, rng);
  EXPECT_EQ(gray.InferBlobShape(EncodedDatum(PatternImage(4, 5), ".png")),
            (vector<int64_t>{1, 1, 4, 5}));
  cv::Mat single(3, 2, CV_8UC1, cv::Scalar(77));
  DataTransformer color(Params("force_color: true"), TEST, rng);
  const Datum datum = EncodedDatum(single, ".png");
  EXPECT_EQ(color.InferBlobShape(datum), (vector<int64_t>{1, 3, 3, 2}));
  for (float v : TransformAll(&color, datum)) EXPECT_EQ(v, 77);
}

TEST(DataTransformerTest, UndecodableEncodedDatumIsAnError) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params(""), TEST, rng);
  Datum datum;
  datum.set_data("definitely not a JPEG");
  datum.set_encoded(true);
  EXPECT_NE(ErrorOf([&] { TransformAll(&transformer, datum); }).find("does not decode as an image"),
            std::string::npos);
}

TEST(DataTransformerTest, CVMatWithCenterCrop) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params("crop_size: 2 mean_value: 1 mean_value: 2 mean_value: 3"),
                              TEST, rng);
  const cv::Mat image = PatternImage(4, 4);
  EXPECT_EQ(transformer.InferBlobShape(image), (vector<int64_t>{1, 3, 2, 2}));
  Blob blob({1, 3, 2, 2});
  transformer.Transform(image, &blob);
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w)
        EXPECT_EQ(blob.data_at(0, c, h, w), 10 * (h + 1) + 3 * (w + 1) + c - (c + 1));
}

#else

TEST(DataTransformerTest, EncodedDatumNeedsOpenCV) {
  std::mt19937_64 rng(1);
  DataTransformer transformer(Params(""), TEST, rng);
  Datum datum;
  datum.set_data("\x89PNG");
  datum.set_encoded(true);
  EXPECT_NE(ErrorOf([&] { TransformAll(&transformer, datum); }).find("built without OpenCV"),
            std::string::npos);
}

#endif  // USE_OPENCV

}  // namespace
}  // namespace caffe
