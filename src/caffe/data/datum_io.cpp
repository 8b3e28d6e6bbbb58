#include "caffe/data/datum_io.hpp"

#include <algorithm>
#include <cctype>

#ifdef USE_OPENCV
#include <opencv2/imgcodecs/imgcodecs.hpp>
#include <opencv2/imgproc/imgproc.hpp>
#endif

#include "caffe/util/io.hpp"

namespace caffe {

namespace {

#ifndef USE_OPENCV
[[noreturn]] void NoOpenCV(const std::string& what) {
  ErrorBuilder() << what << ": built without OpenCV, cannot decode images";
}
#else
int ImreadFlag(ColorMode color) {
  switch (color) {
    case ColorMode::COLOR:
      return cv::IMREAD_COLOR;
    case ColorMode::GRAY:
      return cv::IMREAD_GRAYSCALE;
    case ColorMode::NATIVE:
      break;
  }
  return cv::IMREAD_ANYCOLOR;
}

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// "jpeg" and "jpg" name the same format.
std::string CanonicalExtension(std::string ext) {
  ext = Lowercase(ext);
  return ext == "jpeg" ? "jpg" : ext;
}

bool HasExtension(const std::string& filename, const std::string& encoding) {
  const size_t dot = filename.rfind('.');
  if (dot == std::string::npos) return false;
  return CanonicalExtension(filename.substr(dot + 1)) == CanonicalExtension(encoding);
}

cv::Mat ReadImageFile(const std::string& filename, int flags) {
  cv::Mat image = cv::imread(filename, flags);
  if (image.empty()) {
    CAFFE_REQUIRE(FileExists(filename)) << "image '" << filename << "' does not exist";
    ErrorBuilder() << "image '" << filename << "' cannot be decoded";
  }
  return image;
}

cv::Mat ResizedIfAsked(const cv::Mat& image, int height, int width) {
  if (height <= 0 || width <= 0 || (image.rows == height && image.cols == width)) return image;
  cv::Mat resized;
  cv::resize(image, resized, cv::Size(width, height));
  return resized;
}
#endif

}  // namespace

std::vector<int64_t> DatumShape(const Datum& datum) {
  return {datum.channels(), datum.height(), datum.width()};
}

#ifdef USE_OPENCV

cv::Mat DecodeDatumToCVMat(const Datum& datum, ColorMode color) {
  const std::string& bytes = datum.data();
  cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat image = cv::imdecode(buffer, ImreadFlag(color));
  CAFFE_REQUIRE(!image.empty()) << "encoded datum of " << bytes.size()
                                << " bytes does not decode as an image";
  // Without IMREAD_ANYDEPTH, 16-bit images come back as 8-bit, as CVMatToDatum needs.
  return image;
}

cv::Mat ReadImageToCVMat(const std::string& filename, int height, int width, bool is_color) {
  const cv::Mat image =
      ReadImageFile(filename, is_color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
  return ResizedIfAsked(image, height, width);
}

void CVMatToDatum(const cv::Mat& image, Datum* datum) {
  CHECK(image.depth() == CV_8U) << "images must be 8-bit";
  const int channels = image.channels();
  const int height = image.rows;
  const int width = image.cols;
  datum->set_channels(channels);
  datum->set_height(height);
  datum->set_width(width);
  datum->clear_float_data();
  datum->set_encoded(false);
  std::string pixels(static_cast<size_t>(channels) * height * width, '\0');
  for (int h = 0; h < height; ++h) {
    const uchar* row = image.ptr<uchar>(h);
    for (int w = 0; w < width; ++w) {
      for (int c = 0; c < channels; ++c) {
        pixels[(static_cast<size_t>(c) * height + h) * width + w] =
            static_cast<char>(row[w * channels + c]);
      }
    }
  }
  datum->set_data(std::move(pixels));
}

bool DecodeDatum(Datum* datum, ColorMode color) {
  if (!datum->encoded()) return false;
  const cv::Mat image = DecodeDatumToCVMat(*datum, color);
  CVMatToDatum(image, datum);
  return true;
}

void ReadImageToDatum(const std::string& filename, int label, int height, int width,
                      bool is_color, const std::string& encoding, Datum* datum) {
  datum->Clear();
  if (encoding.empty()) {
    CVMatToDatum(ReadImageToCVMat(filename, height, width, is_color), datum);
  } else {
    // Decoded as stored, so the file's own bytes are kept only when they decode
    // (natively, as readers do) to the wanted channel count.
    cv::Mat image = ReadImageFile(filename, cv::IMREAD_ANYCOLOR);
    const int channels = is_color ? 3 : 1;
    const bool resize = height > 0 && width > 0 && (image.rows != height || image.cols != width);
    std::string bytes;
    if (!resize && image.channels() == channels && HasExtension(filename, encoding)) {
      bytes = ReadFileToString(filename);
    } else {
      if (image.channels() != channels) {
        cv::Mat converted;
        cv::cvtColor(image, converted, is_color ? cv::COLOR_GRAY2BGR : cv::COLOR_BGR2GRAY);
        image = converted;
      }
      image = ResizedIfAsked(image, height, width);
      std::vector<uchar> buffer;
      CAFFE_REQUIRE(cv::imencode("." + CanonicalExtension(encoding), image, buffer))
          << "image '" << filename << "': cannot encode as " << encoding;
      bytes.assign(buffer.begin(), buffer.end());
    }
    datum->set_channels(image.channels());
    datum->set_height(image.rows);
    datum->set_width(image.cols);
    datum->set_data(std::move(bytes));
    datum->set_encoded(true);
  }
  datum->set_label(label);
}

#else  // !USE_OPENCV

bool DecodeDatum(Datum* datum, ColorMode) {
  if (!datum->encoded()) return false;
  NoOpenCV("encoded datum");
}

void ReadImageToDatum(const std::string& filename, int, int, int, bool, const std::string&,
                      Datum*) {
  NoOpenCV("image '" + filename + "'");
}

#endif  // USE_OPENCV

}  // namespace caffe
