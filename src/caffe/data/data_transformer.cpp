#include "caffe/data/data_transformer.hpp"

#include <limits>
#include <string>

#ifdef USE_OPENCV
#include <opencv2/core/core.hpp>
#endif

#include "caffe/util/io.hpp"

namespace caffe {

namespace {

// Throws unless a raw datum (positive C x H x W, checked by the caller first) holds
// exactly C*H*W bytes or float values. Checked before anyone allocates C*H*W floats:
// a corrupt record can declare a shape of petabytes.
void CheckPayload(const Datum& raw) {
  const int64_t plane = static_cast<int64_t>(raw.channels()) * raw.height();  // < 2^62
  const int64_t width = raw.width();
  const bool fits = width <= std::numeric_limits<int64_t>::max() / plane;
  const int64_t expected = fits ? plane * width : -1;
  if (!raw.data().empty()) {
    CAFFE_REQUIRE(static_cast<int64_t>(raw.data().size()) == expected)
        << "datum of shape " << ShapeToString(DatumShape(raw)) << " holds "
        << raw.data().size() << " bytes; expected " << (fits ? std::to_string(expected) : "more");
  } else {
    CAFFE_REQUIRE(raw.float_data_size() == expected)
        << "datum of shape " << ShapeToString(DatumShape(raw)) << " holds "
        << raw.float_data_size() << " float values; expected "
        << (fits ? std::to_string(expected) : "more");
  }
}

}  // namespace

DataTransformer::DataTransformer(const TransformationParameter& param, Phase phase,
                                 std::mt19937_64& rng)
    : param_(param), phase_(phase), rng_(rng) {
  CAFFE_REQUIRE(!(param_.force_color() && param_.force_gray()))
      << "transform_param: force_color and force_gray are exclusive";
  CAFFE_REQUIRE(!(param_.has_mean_file() && param_.mean_value_size() > 0))
      << "transform_param: give mean_file or mean_value, not both";
  if (param_.has_mean_file()) {
    const string& file = param_.mean_file();
    BlobProto proto;
    ReadProtoFromBinaryFile(file, &proto);
    vector<int64_t> shape = ShapeOfProto(proto);
    mean_shape_text_ = ShapeToString(shape);
    // Caffe writes means as 1 x C x H x W; a plain C x H x W is accepted too.
    if (shape.size() == 4 && shape[0] == 1) shape.erase(shape.begin());
    CAFFE_REQUIRE(shape.size() == 3)
        << "mean_file '" << file << "': expected a 1xCxHxW mean, found " << mean_shape_text_;
    // The dimensions come from the file: refuse negative ones and overflowing products.
    int64_t count = 1;
    for (int64_t dim : shape) {
      CAFFE_REQUIRE(dim > 0 && !__builtin_mul_overflow(count, dim, &count))
          << "mean_file '" << file << "': implausible shape " << mean_shape_text_;
    }
    CAFFE_REQUIRE(proto.data_size() == count)
        << "mean_file '" << file << "': shape " << mean_shape_text_ << " needs " << count
        << " values, found " << proto.data_size();
    mean_.assign(proto.data().begin(), proto.data().end());
    mean_shape_ = shape;
  }
  mean_values_.assign(param_.mean_value().begin(), param_.mean_value().end());
}

ColorMode DataTransformer::color_mode() const {
  if (param_.force_color()) return ColorMode::COLOR;
  if (param_.force_gray()) return ColorMode::GRAY;
  return ColorMode::NATIVE;
}

const Datum& DataTransformer::Decoded(const Datum& datum, Datum* storage) const {
  if (!datum.encoded()) return datum;
  *storage = datum;
  DecodeDatum(storage, color_mode());
  return *storage;
}

void DataTransformer::CheckInput(int64_t channels, int64_t height, int64_t width) const {
  const vector<int64_t> shape{channels, height, width};
  CAFFE_REQUIRE(channels > 0 && height > 0 && width > 0)
      << "data of shape " << ShapeToString(shape) << " is empty";
  const int64_t crop = param_.crop_size();
  CAFFE_REQUIRE(crop <= height && crop <= width)
      << "crop_size " << crop << " is larger than the data (" << ShapeToString(shape) << ")";
  if (!mean_shape_.empty()) {
    CAFFE_REQUIRE(mean_shape_ == shape)
        << "mean_file '" << param_.mean_file() << "' has shape " << mean_shape_text_
        << " but the data has shape " << ShapeToString(shape);
  }
  if (!mean_values_.empty()) {
    CAFFE_REQUIRE(mean_values_.size() == 1 || static_cast<int64_t>(mean_values_.size()) == channels)
        << "mean_value gives " << mean_values_.size() << " values; expected 1 or one per channel ("
        << channels << ")";
  }
}

vector<int64_t> DataTransformer::OutputShape(int64_t channels, int64_t height,
                                             int64_t width) const {
  CheckInput(channels, height, width);
  const int64_t crop = param_.crop_size();
  return {1, channels, crop ? crop : height, crop ? crop : width};
}

template <typename PixelAt>
void DataTransformer::Apply(int channels, int height, int width, const PixelAt& pixel,
                            float* dst) {
  CheckInput(channels, height, width);
  const int crop = static_cast<int>(param_.crop_size());
  const int out_height = crop ? crop : height;
  const int out_width = crop ? crop : width;
  const bool train = phase_ == TRAIN;
  // Draw order (mirror, then row, then column offset) follows Caffe's.
  const bool mirror = param_.mirror() && train && rng_() % 2 == 1;
  int h_off = 0;
  int w_off = 0;
  if (crop) {
    if (train) {
      h_off = static_cast<int>(rng_() % (height - crop + 1));
      w_off = static_cast<int>(rng_() % (width - crop + 1));
    } else {
      h_off = (height - crop) / 2;
      w_off = (width - crop) / 2;
    }
  }
  const float scale = param_.scale();
  const bool per_pixel_mean = !mean_.empty();
  for (int c = 0; c < channels; ++c) {
    const float channel_mean =
        mean_values_.empty() ? 0.f : mean_values_[mean_values_.size() == 1 ? 0 : c];
    for (int h = 0; h < out_height; ++h) {
      const int in_h = h + h_off;
      float* out_row = dst + (static_cast<int64_t>(c) * out_height + h) * out_width;
      const float* mean_row =
          per_pixel_mean ? mean_.data() + (static_cast<int64_t>(c) * height + in_h) * width : nullptr;
      for (int w = 0; w < out_width; ++w) {
        const int in_w = w + w_off;
        const float mean = per_pixel_mean ? mean_row[in_w] : channel_mean;
        out_row[mirror ? out_width - 1 - w : w] = (pixel(c, in_h, in_w) - mean) * scale;
      }
    }
  }
}

void DataTransformer::CheckBlob(const vector<int64_t>& item_shape, const Blob& blob) const {
  CAFFE_REQUIRE(blob.shape() == item_shape)
      << "transformed data has shape " << ShapeToString(item_shape)
      << " but the destination blob has shape " << blob.shape_string();
}

vector<int64_t> DataTransformer::InferBlobShape(const Datum& datum) const {
  Datum decoded;
  const Datum& raw = Decoded(datum, &decoded);
  vector<int64_t> shape = OutputShape(raw.channels(), raw.height(), raw.width());
  CheckPayload(raw);
  return shape;
}

void DataTransformer::Transform(const Datum& datum, float* dst) {
  Datum decoded;
  const Datum& raw = Decoded(datum, &decoded);
  const int channels = raw.channels();
  const int height = raw.height();
  const int width = raw.width();
  CheckInput(channels, height, width);
  CheckPayload(raw);
  if (!raw.data().empty()) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(raw.data().data());
    Apply(channels, height, width,
          [&](int c, int h, int w) {
            return static_cast<float>(bytes[(static_cast<int64_t>(c) * height + h) * width + w]);
          },
          dst);
  } else {
    const float* values = raw.float_data().data();
    Apply(channels, height, width,
          [&](int c, int h, int w) {
            return values[(static_cast<int64_t>(c) * height + h) * width + w];
          },
          dst);
  }
}

void DataTransformer::Transform(const Datum& datum, Blob* blob) {
  Datum decoded;
  const Datum& raw = Decoded(datum, &decoded);  // decode once, not per call below
  CheckBlob(InferBlobShape(raw), *blob);
  Transform(raw, blob->mutable_cpu_data());
}

#ifdef USE_OPENCV

vector<int64_t> DataTransformer::InferBlobShape(const cv::Mat& image) const {
  return OutputShape(image.channels(), image.rows, image.cols);
}

void DataTransformer::Transform(const cv::Mat& image, float* dst) {
  CAFFE_REQUIRE(image.depth() == CV_8U) << "images must have 8-bit channels";
  const int channels = image.channels();
  Apply(channels, image.rows, image.cols,
        [&](int c, int h, int w) {
          return static_cast<float>(image.ptr<uchar>(h)[w * channels + c]);
        },
        dst);
}

void DataTransformer::Transform(const cv::Mat& image, Blob* blob) {
  CheckBlob(InferBlobShape(image), *blob);
  Transform(image, blob->mutable_cpu_data());
}

#endif  // USE_OPENCV

}  // namespace caffe
