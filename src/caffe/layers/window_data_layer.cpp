#include "caffe/layers/window_data_layer.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#ifdef USE_OPENCV
#include <opencv2/imgproc/imgproc.hpp>
#endif

#include "caffe/layer_factory.hpp"
#include "caffe/util/io.hpp"

namespace caffe {

namespace {

// The window file's non-blank lines, trimmed, with their 1-based numbers.
class LineReader {
 public:
  explicit LineReader(std::istream& in) : in_(in) {}
  // False at the end of the file.
  bool Next(string* line) {
    while (std::getline(in_, *line)) {
      ++number_;
      const size_t end = line->find_last_not_of(" \t\r");
      if (end == string::npos) continue;
      line->erase(end + 1);
      line->erase(0, line->find_first_not_of(" \t"));
      return true;
    }
    return false;
  }
  int number() const { return number_; }

 private:
  std::istream& in_;
  int number_ = 0;
};

// Whole-text conversions: "12abc" and "1.5" are not integers.
bool ParseInt(const string& text, int* value) {
  try {
    size_t used = 0;
    *value = std::stoi(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool ParseFloat(const string& text, float* value) {
  try {
    size_t used = 0;
    *value = std::stof(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

vector<string> SplitOnWhitespace(const string& line) {
  std::istringstream in(line);
  vector<string> fields;
  for (string field; in >> field;) fields.push_back(field);
  return fields;
}

#ifdef USE_OPENCV
// R-CNN rounds its box arithmetic in single precision; doing the same keeps every crop
// pixel-identical to BVLC's.
int RoundToInt(float value) { return static_cast<int>(std::round(value)); }
#endif

}  // namespace

string WindowDataLayer::At(int line) const {
  return "window file '" + source_ + "' line " + std::to_string(line) + ": ";
}

void WindowDataLayer::ReadWindowFile() {
  std::ifstream file(source_);
  LAYER_REQUIRE(file.good()) << "cannot open window file '" << source_ << "'";
  const WindowDataParameter& param = layer_param_.window_data_param();
  images_.clear();
  image_used_.clear();
  foreground_.clear();
  background_.clear();
  LineReader lines(file);
  string line;
  int record_line = 0;
  // The next line of the current record, which must be there.
  auto next_line = [&](const string& what) {
    LAYER_REQUIRE(lines.Next(&line))
        << "window file '" << source_ << "' ends inside the record that starts on line "
        << record_line << ": expected " << what;
  };
  auto next_int = [&](const string& what, int* value) {
    next_line(what);
    LAYER_REQUIRE(ParseInt(line, value))
        << At(lines.number()) << "expected " << what << ", found '" << line << "'";
  };
  int ignored = 0;
  while (lines.Next(&line)) {
    record_line = lines.number();
    int image_index = 0;  // only checked for form: windows belong to the record they follow
    LAYER_REQUIRE(line[0] == '#' && ParseInt(line.substr(1), &image_index))
        << At(record_line) << "expected '# <image index>', found '" << line << "'";
    Image image;
    next_line("the image path");
    image.path = param.root_folder() + line;
    image.line = lines.number();
    next_int("the image's channels", &image.channels);
    LAYER_REQUIRE(image.channels == 1 || image.channels == 3)
        << At(lines.number()) << "expected 1 or 3 channels, found " << image.channels;
    if (images_.empty()) channels_ = image.channels;
    LAYER_REQUIRE(image.channels == channels_)
        << At(lines.number()) << "the image has " << image.channels
        << " channels but the first image has " << channels_
        << "; every image of a batch needs the same number";
    next_int("the image's height", &image.height);
    LAYER_REQUIRE(image.height > 0)
        << At(lines.number()) << "expected a positive height, found " << image.height;
    next_int("the image's width", &image.width);
    LAYER_REQUIRE(image.width > 0)
        << At(lines.number()) << "expected a positive width, found " << image.width;
    int num_windows = 0;
    next_int("the number of windows", &num_windows);
    LAYER_REQUIRE(num_windows >= 0)
        << At(lines.number()) << "expected the number of windows, found " << num_windows;
    const int image_id = static_cast<int>(images_.size());
    bool used = false;
    for (int k = 0; k < num_windows; ++k) {
      next_line("window " + std::to_string(k + 1) + " of " + std::to_string(num_windows) +
                ", 'class_index overlap x1 y1 x2 y2'");
      const vector<string> fields = SplitOnWhitespace(line);
      Window window;
      window.image = image_id;
      float overlap = 0.f;
      const bool parsed = fields.size() == 6 && ParseInt(fields[0], &window.label) &&
                          ParseFloat(fields[1], &overlap) && ParseInt(fields[2], &window.x1) &&
                          ParseInt(fields[3], &window.y1) && ParseInt(fields[4], &window.x2) &&
                          ParseInt(fields[5], &window.y2);
      LAYER_REQUIRE(parsed) << At(lines.number())
                            << "expected 'class_index overlap x1 y1 x2 y2', found '" << line << "'";
      // Checked here rather than clipped later: a box off the image means a wrong
      // file or image size, and would crop nothing.
      LAYER_REQUIRE(0 <= window.x1 && window.x1 <= window.x2 && window.x2 < image.width &&
                    0 <= window.y1 && window.y1 <= window.y2 && window.y2 < image.height)
          << At(lines.number()) << "window (x1 y1 x2 y2) = (" << window.x1 << " " << window.y1
          << " " << window.x2 << " " << window.y2 << ") does not lie within the image of "
          << image.height << " x " << image.width
          << " pixels (coordinates are 0-based and inclusive)";
      if (overlap >= param.fg_threshold()) {
        LAYER_REQUIRE(window.label > 0)
            << At(lines.number()) << "foreground window (overlap " << overlap << " >= fg_threshold "
            << param.fg_threshold() << ") has class " << window.label
            << "; classes start at 1, label 0 is the background";
        foreground_.push_back(window);
        used = true;
      } else if (overlap < param.bg_threshold()) {
        window.label = 0;
        background_.push_back(window);
        used = true;
      } else {
        ++ignored;  // between the thresholds: neither object nor background
      }
    }
    images_.push_back(image);
    image_used_.push_back(used);
  }
  LAYER_REQUIRE(!images_.empty()) << "window file '" << source_ << "' describes no images";
  LOG(INFO) << name() << ": " << images_.size() << " images, " << foreground_.size()
            << " foreground and " << background_.size() << " background windows (" << ignored
            << " between the thresholds, unused)";
}

void WindowDataLayer::BuildMean(const TransformationParameter& transform) {
  const int64_t plane = static_cast<int64_t>(crop_size_) * crop_size_;
  mean_.assign(static_cast<size_t>(channels_ * plane), 0.f);
  if (transform.has_mean_file()) {
    // The transformer's constructor has already read the file and checked that it
    // holds a 1 x C x H x W (or C x H x W) mean with all its values.
    const string& file = transform.mean_file();
    BlobProto proto;
    try {
      ReadProtoFromBinaryFile(file, &proto);
    } catch (const Error& e) {
      Fail() << e.what();
    }
    vector<int64_t> shape = ShapeOfProto(proto);
    if (shape.size() == 4 && shape[0] == 1) shape.erase(shape.begin());
    // Like R-CNN, the output pixels subtract the centre crop_size x crop_size of the
    // mean (an ImageNet mean is 256 x 256 for 227 x 227 crops).
    LAYER_REQUIRE(shape.size() == 3 && shape[0] == channels_ && shape[1] >= crop_size_ &&
                  shape[2] >= crop_size_)
        << "mean_file '" << file << "' has shape " << ShapeToString(ShapeOfProto(proto))
        << "; expected " << channels_ << " channels (the window file's images) and a height "
        << "and width of at least crop_size " << crop_size_;
    const int64_t height = shape[1];
    const int64_t width = shape[2];
    LAYER_REQUIRE(proto.data_size() == channels_ * height * width)
        << "mean_file '" << file << "' holds " << proto.data_size() << " values; its shape "
        << ShapeToString(shape) << " needs " << channels_ * height * width;
    const int64_t top = (height - crop_size_) / 2;
    const int64_t left = (width - crop_size_) / 2;
    for (int64_t c = 0; c < channels_; ++c)
      for (int64_t h = 0; h < crop_size_; ++h)
        for (int64_t w = 0; w < crop_size_; ++w)
          mean_[(c * crop_size_ + h) * crop_size_ + w] =
              proto.data(static_cast<int>((c * height + top + h) * width + left + w));
  } else if (transform.mean_value_size() > 0) {
    const int values = transform.mean_value_size();
    LAYER_REQUIRE(values == 1 || values == channels_)
        << "mean_value gives " << values << " values; expected 1 or one per channel (" << channels_
        << ")";
    for (int c = 0; c < channels_; ++c) {
      std::fill_n(mean_.begin() + c * plane, plane, transform.mean_value(values == 1 ? 0 : c));
    }
  }
}

#ifdef USE_OPENCV

cv::Mat WindowDataLayer::ReadImage(int index) const {
  const Image& image = images_[index];
  cv::Mat decoded;
  try {
    decoded = ReadImageToCVMat(image.path, 0, 0, image.channels == 3);
  } catch (const Error& e) {
    Fail() << At(image.line) << e.what();
  }
  LAYER_REQUIRE(decoded.rows == image.height && decoded.cols == image.width)
      << At(image.line) << "image '" << image.path << "' is " << decoded.rows << " x "
      << decoded.cols << " pixels but the window file gives " << image.height << " x "
      << image.width;
  return decoded;
}

void WindowDataLayer::WarpWindow(const cv::Mat& image, const Window& window, bool mirror,
                                 float* item) const {
  const int size = crop_size_;
  int x1 = window.x1;
  int y1 = window.y1;
  int x2 = window.x2;
  int y2 = window.y2;
  // Zero rows above and columns left of the warped region in the output, and its size.
  int pad_top = 0;
  int pad_left = 0;
  int warped_height = size;
  int warped_width = size;
  if (context_pad_ > 0 || square_) {
    // Grow the box about its centre so that, warped to size x size, the window itself
    // spans size - 2 * context_pad pixels: context_pad pixels of context on each side.
    const float context_scale =
        static_cast<float>(size) / static_cast<float>(size - 2 * context_pad_);
    float half_height = static_cast<float>(y2 - y1 + 1) / 2.f;
    float half_width = static_cast<float>(x2 - x1 + 1) / 2.f;
    const float center_x = static_cast<float>(x1) + half_width;
    const float center_y = static_cast<float>(y1) + half_height;
    if (square_) half_height = half_width = std::max(half_height, half_width);
    x1 = RoundToInt(center_x - half_width * context_scale);
    x2 = RoundToInt(center_x + half_width * context_scale);
    y1 = RoundToInt(center_y - half_height * context_scale);
    y2 = RoundToInt(center_y + half_height * context_scale);
    const int grown_height = y2 - y1 + 1;
    const int grown_width = x2 - x1 + 1;
    // The grown box can leave the image: read only its inside, and leave zero in the
    // output where the outside would have gone.
    const int cut_top = std::max(0, -y1);
    const int cut_left = std::max(0, -x1);
    const int cut_bottom = std::max(0, y2 - (image.rows - 1));
    const int cut_right = std::max(0, x2 - (image.cols - 1));
    y1 += cut_top;
    x1 += cut_left;
    y2 -= cut_bottom;
    x2 -= cut_right;
    const float scale_y = static_cast<float>(size) / static_cast<float>(grown_height);
    const float scale_x = static_cast<float>(size) / static_cast<float>(grown_width);
    warped_height = RoundToInt(static_cast<float>(y2 - y1 + 1) * scale_y);
    warped_width = RoundToInt(static_cast<float>(x2 - x1 + 1) * scale_x);
    pad_top = RoundToInt(static_cast<float>(cut_top) * scale_y);
    // Mirroring flips the whole output, margin included: the right margin comes left.
    pad_left = RoundToInt(static_cast<float>(mirror ? cut_right : cut_left) * scale_x);
    // Rounding can make margin + warp one pixel too many; the warp gives way. (A box
    // far thinner than its grown square could round to nothing: keep a pixel.)
    pad_top = std::min(pad_top, size - 1);
    pad_left = std::min(pad_left, size - 1);
    warped_height = std::max(1, std::min(warped_height, size - pad_top));
    warped_width = std::max(1, std::min(warped_width, size - pad_left));
  }
  const cv::Mat region = image(cv::Rect(x1, y1, x2 - x1 + 1, y2 - y1 + 1));
  cv::Mat warped;
  if (region.rows == warped_height && region.cols == warped_width) {
    warped = region;  // already the output size: copied exactly, without resampling
  } else {
    cv::resize(region, warped, cv::Size(warped_width, warped_height), 0, 0, cv::INTER_LINEAR);
  }
  const int channels = warped.channels();
  for (int h = 0; h < warped_height; ++h) {
    const uchar* row = warped.ptr<uchar>(h);
    const int out_h = pad_top + h;
    for (int w = 0; w < warped_width; ++w) {
      const int source_w = mirror ? warped_width - 1 - w : w;
      const int out_w = pad_left + w;
      for (int c = 0; c < channels; ++c) {
        const int64_t out = (static_cast<int64_t>(c) * size + out_h) * size + out_w;
        item[out] = (static_cast<float>(row[source_w * channels + c]) - mean_[out]) * scale_;
      }
    }
  }
}

void WindowDataLayer::DataLayerSetUp(const vector<Blob*>& top) {
  const WindowDataParameter& param = layer_param_.window_data_param();
  const TransformationParameter transform = transform_param();
  source_ = param.source();
  LAYER_REQUIRE(!source_.empty()) << "window_data_param.source is empty";
  LAYER_REQUIRE(param.batch_size() > 0) << "window_data_param.batch_size must be positive";
  batch_size_ = static_cast<int>(param.batch_size());
  crop_size_ = static_cast<int>(transform.crop_size());
  LAYER_REQUIRE(crop_size_ > 0)
      << "crop_size must be positive (set transform_param.crop_size): every window is "
         "warped to crop_size x crop_size";
  LAYER_REQUIRE(param.crop_mode() == "warp" || param.crop_mode() == "square")
      << "window_data_param.crop_mode must be 'warp' or 'square', found '" << param.crop_mode()
      << "'";
  square_ = param.crop_mode() == "square";
  LAYER_REQUIRE(2 * static_cast<int64_t>(param.context_pad()) < crop_size_)
      << "window_data_param.context_pad " << param.context_pad()
      << " leaves no room for the window in a crop of " << crop_size_ << " pixels";
  context_pad_ = static_cast<int>(param.context_pad());
  LAYER_REQUIRE(param.fg_fraction() >= 0.f && param.fg_fraction() <= 1.f)
      << "window_data_param.fg_fraction must lie in [0, 1], found " << param.fg_fraction();
  // Rounded down in single precision, as BVLC does, so that batches match its own.
  foreground_per_batch_ = static_cast<int>(static_cast<float>(batch_size_) * param.fg_fraction());
  mirror_ = transform.mirror() && phase_ == TRAIN;  // as the transformer mirrors
  scale_ = transform.scale();
  cache_images_ = param.cache_images();

  ReadWindowFile();
  const int background_per_batch = batch_size_ - foreground_per_batch_;
  LAYER_REQUIRE(foreground_per_batch_ == 0 || !foreground_.empty())
      << "window file '" << source_ << "' has no foreground windows (overlap >= fg_threshold "
      << param.fg_threshold() << "), but fg_fraction " << param.fg_fraction() << " takes "
      << foreground_per_batch_ << " of each batch of " << batch_size_;
  LAYER_REQUIRE(background_per_batch == 0 || !background_.empty())
      << "window file '" << source_ << "' has no background windows (overlap < bg_threshold "
      << param.bg_threshold() << "), but " << background_per_batch << " of each batch of "
      << batch_size_ << " are background (fg_fraction " << param.fg_fraction() << ")";
  BuildMean(transform);

  // Decoding here turns a wrong root_folder or path into an error at setup rather than
  // at the first forward: every used image with cache_images, else the first one.
  cache_.assign(cache_images_ ? images_.size() : 0, cv::Mat());
  size_t cached_bytes = 0;
  for (size_t i = 0; i < images_.size(); ++i) {
    if (!image_used_[i]) continue;
    const cv::Mat decoded = ReadImage(static_cast<int>(i));
    if (!cache_images_) break;
    cache_[i] = decoded;
    cached_bytes += decoded.total() * decoded.elemSize();
  }
  if (cache_images_) {
    LOG(INFO) << name() << ": cached the images, " << cached_bytes / (1 << 20) << " MiB";
  }

  ShapeTopsAndBatches(top, {batch_size_, channels_, crop_size_, crop_size_}, {batch_size_});
  LOG(INFO) << name() << ": batches of " << batch_size_ << " (" << foreground_per_batch_
            << " foreground), " << channels_ << " x " << crop_size_ << " x " << crop_size_;
}

void WindowDataLayer::LoadBatch(Batch* batch) {
  float* data = batch->data.mutable_cpu_data();
  std::fill_n(data, batch->data.count(), 0.f);  // the margins outside the images stay 0
  float* labels = output_labels_ ? batch->label.mutable_cpu_data() : nullptr;
  const int64_t item_count = batch->data.count(1);
  const int background_per_batch = batch_size_ - foreground_per_batch_;
  for (int i = 0; i < batch_size_; ++i) {
    // Background first, then foreground, as in BVLC's batches. The draw order (window,
    // then mirror) is BVLC's too.
    const vector<Window>& windows = i < background_per_batch ? background_ : foreground_;
    const Window& window = windows[rng_() % windows.size()];
    const bool mirror = mirror_ && rng_() % 2 == 1;
    const cv::Mat image = cache_images_ ? cache_[window.image] : ReadImage(window.image);
    WarpWindow(image, window, mirror, data + i * item_count);
    if (labels) labels[i] = static_cast<float>(window.label);
  }
}

#else  // !USE_OPENCV

void WindowDataLayer::DataLayerSetUp(const vector<Blob*>& top) {
  Fail() << "built without OpenCV, cannot read images";
}

void WindowDataLayer::LoadBatch(Batch* batch) {}

#endif  // USE_OPENCV

REGISTER_LAYER_CLASS(WindowData);

}  // namespace caffe
