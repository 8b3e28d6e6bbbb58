// Turns one record (Datum or OpenCV image) into a CHW float item for a data layer:
// crop (random offset in TRAIN, centred in TEST), mirror (random, TRAIN only),
// subtract a mean (file or per-channel values), then scale:
//   out = (pixel - mean) * scale.
#ifndef CAFFE_DATA_DATA_TRANSFORMER_HPP_
#define CAFFE_DATA_DATA_TRANSFORMER_HPP_

#include <random>
#include <string>
#include <vector>

#include "caffe/blob.hpp"
#include "caffe/common.hpp"
#include "caffe/data/datum_io.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

class DataTransformer {
 public:
  // Loads mean_file and validates the parameters (caffe::Error when inconsistent).
  // `rng` supplies the random crops and mirrors; the caller owns it and must not use
  // it on another thread while this transformer runs.
  DataTransformer(const TransformationParameter& param, Phase phase, std::mt19937_64& rng);

  // Shape of one transformed item: {1, C, H', W'}, with H' = W' = crop_size when
  // cropping. Encoded data are decoded to learn their size.
  vector<int64_t> InferBlobShape(const Datum& datum) const;
  // Writes count(InferBlobShape(datum)) floats to dst.
  void Transform(const Datum& datum, float* dst);
  // The blob's shape must be InferBlobShape(datum); its data is overwritten.
  void Transform(const Datum& datum, Blob* blob);

  // `datum` itself when it holds raw pixels, else its decoded form (force_color /
  // force_gray honoured) written to *storage.
  const Datum& Decoded(const Datum& datum, Datum* storage) const;
  ColorMode color_mode() const;

#ifdef USE_OPENCV
  vector<int64_t> InferBlobShape(const cv::Mat& image) const;
  // 8-bit HWC (BGR) image; writes count(InferBlobShape(image)) floats.
  void Transform(const cv::Mat& image, float* dst);
  void Transform(const cv::Mat& image, Blob* blob);
#endif

  const TransformationParameter& param() const { return param_; }

 private:
  // Throws unless a C x H x W input can be cropped and has a matching mean.
  void CheckInput(int64_t channels, int64_t height, int64_t width) const;
  vector<int64_t> OutputShape(int64_t channels, int64_t height, int64_t width) const;
  // pixel(c, h, w) reads the input at un-cropped coordinates.
  template <typename PixelAt>
  void Apply(int channels, int height, int width, const PixelAt& pixel, float* dst);
  void CheckBlob(const vector<int64_t>& item_shape, const Blob& blob) const;

  TransformationParameter param_;
  Phase phase_;
  std::mt19937_64& rng_;
  vector<float> mean_;           // from mean_file, C x H x W
  vector<int64_t> mean_shape_;   // {C, H, W} of mean_, empty without a mean_file
  string mean_shape_text_;       // the file's own shape, for messages
  vector<float> mean_values_;    // one, or one per channel
};

}  // namespace caffe

#endif  // CAFFE_DATA_DATA_TRANSFORMER_HPP_
