// Conversions between image files, OpenCV images and Datum records. Decoding needs
// OpenCV; built without it, anything that must decode or read an image throws a
// caffe::Error saying so, and raw (already decoded) records still work.
#ifndef CAFFE_DATA_DATUM_IO_HPP_
#define CAFFE_DATA_DATUM_IO_HPP_

#include <string>
#include <vector>

#ifdef USE_OPENCV
#include <opencv2/core/core.hpp>
#endif

#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

// How to decode colour: as stored, forced to 3-channel BGR, or forced to 1 channel.
enum class ColorMode { NATIVE, COLOR, GRAY };

// {channels, height, width} as the record declares it.
std::vector<int64_t> DatumShape(const Datum& datum);

// Replaces an encoded (JPEG/PNG) datum's payload with raw CHW uint8 pixels. Returns
// false, leaving the datum alone, when it was not encoded.
bool DecodeDatum(Datum* datum, ColorMode color = ColorMode::NATIVE);

// Reads an image file into a datum with `label`. height/width of 0 keep the file's
// size. `encoding` empty stores raw pixels; "jpg"/"png" stores compressed bytes (the
// file's own bytes when it already has that format and needs no resize or colour
// change). Throws caffe::Error naming the file when it cannot be read or decoded.
void ReadImageToDatum(const std::string& filename, int label, int height, int width,
                      bool is_color, const std::string& encoding, Datum* datum);

#ifdef USE_OPENCV
// Decodes an encoded datum; throws caffe::Error when the bytes are not an image.
cv::Mat DecodeDatumToCVMat(const Datum& datum, ColorMode color = ColorMode::NATIVE);
// Reads (and resizes when height and width are positive) an image file.
cv::Mat ReadImageToCVMat(const std::string& filename, int height = 0, int width = 0,
                         bool is_color = true);
// HWC (BGR) 8-bit image to raw CHW uint8 datum data; label is left alone.
void CVMatToDatum(const cv::Mat& image, Datum* datum);
#endif

}  // namespace caffe

#endif  // CAFFE_DATA_DATUM_IO_HPP_
